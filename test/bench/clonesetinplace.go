package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	inPlaceNamespace = "bench-cloneset-inplace"
	// inPlaceImage is the new image of the change: a tag only, so that an
	// InPlaceIfPossible CloneSet can update its pods in place.
	inPlaceImage = "registry.k8s.io/pause:3.10.1"
	// Targets of issue 5.
	inPlaceWritesTarget = 3.1
	inPlaceRSSTarget    = 150 << 20
)

// imageChange replaces the container's image and nothing else: a merge
// patch would replace the whole containers list (a CRD has no strategic
// merge), resources included, which no in-place update can apply.
var imageChange = []byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"` + inPlaceImage + `"}]`)

// updateKinds run one after the other, each on a CloneSet of its own that
// is deleted before the next: the same image change, once in place and
// once by recreating the pods. In-place runs first, so that its RSS figure
// is taken with no more than its own 1,000 pods ever cached.
var updateKinds = []kruiseappsv1alpha1.CloneSetUpdateStrategyType{
	kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
	kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType,
}

// cloneSetInPlace changes the image of a 1,000-replica CloneSet in place,
// against the same change by recreating the pods.
func cloneSetInPlace() Scenario {
	return Scenario{
		Name: "cloneset-inplace",
		Description: fmt.Sprintf("the image of a %d-replica CloneSet (maxUnavailable 100%%) changed in place until every pod is "+
			"updated and Ready, against the same change on a ReCreate CloneSet", clonesetReplicas),
		Cluster: cluster.Options{ControllerManager: true, Scheduler: true, Nodes: clonesetNodes, PodsPerNode: 110,
			Args: nativeArgs()},
		Timeout: 15 * time.Minute,
		Run:     runCloneSetInPlace,
	}
}

func runCloneSetInPlace(ctx context.Context, env *Env, res *Result) error {
	res.Cluster.Objects = map[string]int{"clonesets": len(updateKinds), "pods": 3 * clonesetReplicas}
	dyn, kcm, err := startCloneSetScenario(ctx, env, inPlaceNamespace)
	if err != nil {
		return err
	}
	runs, err := runUpdates(ctx, env, dyn, kcm)
	if err != nil {
		return err
	}
	res.Record(runs[0].Phase)
	addUpdateMetrics(res, runs[0], runs[1])
	return errors.Join(checkReplacement(runs[0]), checkReplacement(runs[1]))
}

func runUpdates(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc) ([]updateRun, error) {
	runs := make([]updateRun, 0, len(updateKinds))
	for _, kind := range updateKinds {
		name := "cloneset-" + strings.ToLower(string(kind))
		run, err := runUpdate(ctx, env, dyn, kcm, name, kind)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		runs = append(runs, run)
		if err := removeWorkload(ctx, env, inPlaceNamespace, name, deleteCloneSet(dyn, inPlaceNamespace, name)); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// updateRun is one CloneSet's image change.
type updateRun struct {
	Strategy kruiseappsv1alpha1.CloneSetUpdateStrategyType
	// Setup is creating the CloneSet until its pods were all Ready.
	Setup    time.Duration
	Figures  runFigures
	Phase    Phase
	Pods     replacement
	Counters []float64
}

// runUpdate creates a CloneSet of clonesetReplicas with the strategy and
// times the image change until its status shows every pod updated and
// Ready.
func runUpdate(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc, name string,
	kind kruiseappsv1alpha1.CloneSetUpdateStrategyType) (updateRun, error) {
	run := updateRun{Strategy: kind}
	before, err := createUpdateCloneSet(ctx, env, dyn, name, kind, &run)
	if err != nil {
		return run, err
	}
	ctx, cancel := context.WithTimeout(ctx, clonesetRunTimeout)
	defer cancel()
	env.Logf("%s: changing the image (%s)", name, kind)
	w, phase, err := timeWorkloadChange(ctx, env, kcm, timedChange{
		namespace: inPlaceNamespace, name: name, pods: newPodProgress(specNewImage, readyOnNewImage),
		status: func(ctx context.Context, m *marks) (*follower, error) {
			return followCloneSet(ctx, dyn, inPlaceNamespace, name, generationsWhere(cloneSetUpdated, m))
		},
		settle: watchConnect,
		change: func(ctx context.Context) (int64, error) {
			return patchCloneSet(ctx, dyn, inPlaceNamespace, name, types.JSONPatchType, imageChange)
		},
	})
	if err != nil {
		return run, err
	}
	run.Phase, run.Counters = phase, w.Counters
	if run.Figures, err = analyseRun(w, clonesetReplicas); err != nil {
		return run, err
	}
	logRun(env, name, run.Figures, run.Phase, "on the new image")
	run.Pods, err = replacementOf(ctx, env, name, before)
	return run, err
}

// createUpdateCloneSet creates the CloneSet, waits until its pods are all
// Ready and the cluster has settled, and returns the pods' UIDs.
func createUpdateCloneSet(ctx context.Context, env *Env, dyn dynamic.Interface, name string,
	kind kruiseappsv1alpha1.CloneSetUpdateStrategyType, run *updateRun) (map[types.UID]bool, error) {
	begin := time.Now()
	strategy := kruiseappsv1alpha1.CloneSetUpdateStrategy{Type: kind, MaxUnavailable: ptr.To(intstr.FromString("100%"))}
	if err := createCloneSet(ctx, dyn, benchCloneSet(inPlaceNamespace, name, clonesetReplicas, strategy)); err != nil {
		return nil, err
	}
	if err := waitCloneSet(ctx, dyn, inPlaceNamespace, name, cloneSetScaled); err != nil {
		return nil, err
	}
	run.Setup = time.Since(begin)
	env.Logf("%s: %d pods Ready in %v", name, clonesetReplicas, run.Setup.Round(time.Second))
	if err := sleep(ctx, clonesetSettle); err != nil {
		return nil, err
	}
	pods, err := listPods(ctx, env, name)
	return uidsOf(pods), err
}

func listPods(ctx context.Context, env *Env, name string) ([]corev1.Pod, error) {
	list, err := env.Kube.CoreV1().Pods(inPlaceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", name, err)
	}
	return list.Items, nil
}

func replacementOf(ctx context.Context, env *Env, name string, before map[types.UID]bool) (replacement, error) {
	pods, err := listPods(ctx, env, name)
	if err != nil {
		return replacement{}, err
	}
	return countReplacement(pods, before), nil
}

// checkReplacement fails a run whose pods did not change the way its
// strategy says: then its time measures something else.
func checkReplacement(run updateRun) error {
	p, want := run.Pods, clonesetReplicas
	if run.Strategy == kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType {
		if p.Pods != want || p.OnImage != want || p.Kept != 0 {
			return fmt.Errorf("ReCreate: %d pods, %d on the new image, %d kept; want %d new pods", p.Pods, p.OnImage, p.Kept, want)
		}
		return nil
	}
	if p.Pods != want || p.InPlace != want {
		return fmt.Errorf("%s: %d pods, %d kept, %d updated in place; want all %d in place", run.Strategy, p.Pods, p.Kept, p.InPlace, want)
	}
	return nil
}

// addUpdateMetrics adds the figures: the in-place times against
// recreating, the manager's writes per pod and its RSS.
func addUpdateMetrics(res *Result, inPlace, recreate updateRun) {
	ip, rc := inPlace.Figures, recreate.Figures
	res.Add(
		Metric{Name: "in-place update of 1000 pods", Unit: UnitSeconds, Value: ip.Total.Seconds(),
			Note: "image change sent -> status updatedReadyReplicas 1000 at the current generation"}.
			Compared("ReCreate", rc.Total.Seconds()),
		Metric{Name: "all pods on the new image (spec)", Unit: UnitSeconds, Value: ip.AllStarted.Seconds(),
			Note: "change sent -> last pod seen with the new image in its spec: patched in place, or created (ReCreate)"}.
			Compared("ReCreate", rc.AllStarted.Seconds()),
		Metric{Name: "all pods Ready on the new image", Unit: UnitSeconds, Value: ip.AllFinished.Seconds(),
			Note: "change sent -> last pod seen Ready, its container reporting the new image"}.
			Compared("ReCreate", rc.AllFinished.Seconds()),
		Metric{Name: "status lag", Unit: UnitSeconds, Value: ip.StatusLag.Seconds(), Note: "last pod Ready -> the status showing it"}.
			Compared("ReCreate", rc.StatusLag.Seconds()),
	)
	addUpdateRunMetrics(res, "in-place", inPlace, true)
	addUpdateRunMetrics(res, "ReCreate", recreate, false)
}

func addUpdateRunMetrics(res *Result, label string, run updateRun, targets bool) {
	perPod := Metric{Name: "manager writes per pod (" + label + ")", Unit: UnitPerPod,
		Value: float64(writes(run.Phase.Requests)) / clonesetReplicas, Note: perPodWrites(run.Phase.Requests, clonesetReplicas)}
	m := run.Phase.Usage[ManagerName]
	rss := Metric{Name: "manager peak RSS (" + label + ")", Unit: UnitBytes, Value: float64(m.PeakRSSBytes)}
	if targets {
		perPod, rss = perPod.WithTarget(inPlaceWritesTarget), rss.WithTarget(inPlaceRSSTarget)
	}
	p := run.Pods
	res.Add(perPod, rss,
		Metric{Name: "manager CPU (" + label + ")", Unit: UnitCores, Value: m.Cores, Note: usageNote(ManagerName, m)},
		Metric{Name: "pods updated in place (" + label + ")", Unit: UnitCount, Value: float64(p.InPlace),
			Note: fmt.Sprintf("of %d pods after the change: %d kept their UID, %d report the new image", p.Pods, p.Kept, p.OnImage)},
		Metric{Name: "setup: 1000 pods Ready (" + label + ")", Unit: UnitSeconds, Value: run.Setup.Seconds(),
			Note: "CloneSet created -> status Ready and available, by the manager"},
	)
	res.Add(counterMetrics(cloneSetCounters, run.Counters, " ("+label+")", "")...)
}
