package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

const statefulSetInPlaceNamespace = "bench-statefulset-inplace"

// setUpdateKinds run one after the other, each on a set of its own that is deleted before the next: the same
// image change, once in place and once by recreating the pods. In-place runs first, so that its RSS figure is
// taken with no more than its own pods ever cached.
var setUpdateKinds = []kruiseappsv1beta1.PodUpdateStrategyType{
	kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType,
	kruiseappsv1beta1.RecreatePodUpdateStrategyType,
}

// statefulSetInPlace changes the image of a 500-replica Advanced StatefulSet in place, against the same
// change by recreating the pods.
func statefulSetInPlace() Scenario {
	return Scenario{
		Name: "statefulset-inplace",
		Description: fmt.Sprintf("the image of a %d-replica Parallel Advanced StatefulSet (maxUnavailable 100%%) changed in place until "+
			"every pod is updated and Ready, against the same change with podUpdatePolicy ReCreate", statefulSetReplicas),
		Cluster: cluster.Options{ControllerManager: true, Scheduler: true, Nodes: statefulSetNodes, PodsPerNode: 110,
			Args: nativeArgs()},
		Timeout: 15 * time.Minute,
		Run:     runStatefulSetInPlace,
	}
}

func runStatefulSetInPlace(ctx context.Context, env *Env, res *Result) error {
	res.Cluster.Objects = map[string]int{"advanced statefulsets": len(setUpdateKinds), "pods": 3 * statefulSetReplicas}
	dyn, kcm, err := startCloneSetScenario(ctx, env, statefulSetInPlaceNamespace)
	if err != nil {
		return err
	}
	runs := make([]setUpdateRun, 0, len(setUpdateKinds))
	for _, policy := range setUpdateKinds {
		run, err := runSetUpdate(ctx, env, dyn, kcm, policy)
		if err != nil {
			return fmt.Errorf("%s: %w", policy, err)
		}
		runs = append(runs, run)
	}
	res.Record(runs[0].Phase)
	addSetUpdateMetrics(res, runs[0], runs[1])
	return errors.Join(checkSetReplacement(runs[0]), checkSetReplacement(runs[1]))
}

// setUpdateRun is one set's image change.
type setUpdateRun struct {
	Policy kruiseappsv1beta1.PodUpdateStrategyType
	// Setup is creating the set until its pods were all Ready.
	Setup    time.Duration
	Figures  runFigures
	Phase    Phase
	Pods     replacement
	Counters []float64
}

// runSetUpdate creates a set of statefulSetReplicas with the policy, times the image change until its
// status shows every pod updated and Ready, and deletes it.
func runSetUpdate(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc, policy kruiseappsv1beta1.PodUpdateStrategyType) (setUpdateRun, error) {
	name := "asts-" + map[bool]string{true: "inplace", false: "recreate"}[policy != kruiseappsv1beta1.RecreatePodUpdateStrategyType]
	run := setUpdateRun{Policy: policy}
	before, err := createUpdateSet(ctx, env, dyn, name, policy, &run)
	if err != nil {
		return run, err
	}
	if err := timeSetUpdate(ctx, env, dyn, kcm, name, before, &run); err != nil {
		return run, err
	}
	return run, removeWorkload(ctx, env, statefulSetInPlaceNamespace, name, deleteAdvancedStatefulSet(dyn, statefulSetInPlaceNamespace, name))
}

func timeSetUpdate(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc, name string, before map[types.UID]bool, run *setUpdateRun) error {
	ctx, cancel := context.WithTimeout(ctx, clonesetRunTimeout)
	defer cancel()
	env.Logf("%s: changing the image (%s)", name, run.Policy)
	w, phase, err := timeWorkloadChange(ctx, env, kcm, timedChange{
		namespace: statefulSetInPlaceNamespace, name: name, pods: newPodProgress(specNewImage, readyOnNewImage),
		status: func(ctx context.Context, m *marks) (*follower, error) {
			return followAdvancedStatefulSet(ctx, dyn, statefulSetInPlaceNamespace, name, setGenerationsWhere(setUpdated, m))
		},
		settle: watchConnect, counters: statefulSetCounters,
		change: func(ctx context.Context) (int64, error) {
			return patchAdvancedStatefulSet(ctx, dyn, statefulSetInPlaceNamespace, name, types.JSONPatchType, imageChange)
		},
	})
	if err != nil {
		return err
	}
	run.Phase, run.Counters = phase, w.Counters
	if run.Figures, err = analyseRun(w, statefulSetReplicas); err != nil {
		return err
	}
	logRun(env, name, run.Figures, run.Phase, "on the new image")
	list, err := env.Kube.CoreV1().Pods(statefulSetInPlaceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return fmt.Errorf("listing the pods of %s: %w", name, err)
	}
	run.Pods = countReplacement(list.Items, before)
	return nil
}

// createUpdateSet creates the set, waits until its pods are all Ready and the cluster has settled, and
// returns the pods' UIDs.
func createUpdateSet(ctx context.Context, env *Env, dyn dynamic.Interface, name string, policy kruiseappsv1beta1.PodUpdateStrategyType,
	run *setUpdateRun) (map[types.UID]bool, error) {
	begin := time.Now()
	strategy := allAtOnce
	if policy != kruiseappsv1beta1.RecreatePodUpdateStrategyType {
		strategy = inPlaceSet
	}
	if err := createAdvancedStatefulSet(ctx, dyn, benchAdvancedStatefulSet(statefulSetInPlaceNamespace, name, statefulSetReplicas, strategy)); err != nil {
		return nil, err
	}
	if err := waitAdvancedStatefulSet(ctx, dyn, statefulSetInPlaceNamespace, name, setScaled); err != nil {
		return nil, err
	}
	run.Setup = time.Since(begin)
	env.Logf("%s: %d pods Ready in %v", name, statefulSetReplicas, run.Setup.Round(time.Second))
	if err := sleep(ctx, clonesetSettle); err != nil {
		return nil, err
	}
	list, err := env.Kube.CoreV1().Pods(statefulSetInPlaceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", name, err)
	}
	return uidsOf(list.Items), nil
}

// checkSetReplacement fails a run whose pods did not change the way its policy says: then its time measures
// something else.
func checkSetReplacement(run setUpdateRun) error {
	p, want := run.Pods, statefulSetReplicas
	if run.Policy == kruiseappsv1beta1.RecreatePodUpdateStrategyType {
		if p.Pods != want || p.OnImage != want || p.Kept != 0 {
			return fmt.Errorf("ReCreate: %d pods, %d on the new image, %d kept; want %d new pods", p.Pods, p.OnImage, p.Kept, want)
		}
		return nil
	}
	if p.Pods != want || p.InPlace != want {
		return fmt.Errorf("%s: %d pods, %d kept, %d updated in place; want all %d in place", run.Policy, p.Pods, p.Kept, p.InPlace, want)
	}
	return nil
}

// addSetUpdateMetrics adds the figures: both times, the manager's writes per pod and its RSS.
func addSetUpdateMetrics(res *Result, inPlace, recreate setUpdateRun) {
	ip, rc := inPlace.Figures, recreate.Figures
	res.Add(
		Metric{Name: fmt.Sprintf("in-place update of %d pods", statefulSetReplicas), Unit: UnitSeconds, Value: ip.Total.Seconds(),
			Note: fmt.Sprintf("image change sent -> status updatedReadyReplicas %d at the current generation", statefulSetReplicas)}.
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
	addSetUpdateRunMetrics(res, "in-place", inPlace)
	addSetUpdateRunMetrics(res, "ReCreate", recreate)
}

func addSetUpdateRunMetrics(res *Result, label string, run setUpdateRun) {
	m, p := run.Phase.Usage[ManagerName], run.Pods
	res.Add(
		Metric{Name: "manager writes per pod (" + label + ")", Unit: UnitPerPod,
			Value: float64(writes(run.Phase.Requests)) / statefulSetReplicas, Note: perPodWrites(run.Phase.Requests, statefulSetReplicas)},
		Metric{Name: "manager peak RSS (" + label + ")", Unit: UnitBytes, Value: float64(m.PeakRSSBytes)},
		Metric{Name: "manager CPU (" + label + ")", Unit: UnitCores, Value: m.Cores, Note: usageNote(ManagerName, m)},
		Metric{Name: "pods updated in place (" + label + ")", Unit: UnitCount, Value: float64(p.InPlace),
			Note: fmt.Sprintf("of %d pods after the change: %d kept their UID, %d report the new image", p.Pods, p.Kept, p.OnImage)},
		Metric{Name: fmt.Sprintf("setup: %d pods Ready (%s)", statefulSetReplicas, label), Unit: UnitSeconds, Value: run.Setup.Seconds(),
			Note: "Advanced StatefulSet created -> status Ready and available, by the manager"},
	)
	res.Add(counterMetrics(statefulSetCounters, run.Counters, " ("+label+")", "")...)
}
