package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	scaleNamespace = "bench-cloneset-scale"
	kindCloneSet   = "CloneSet"
	kindReplicaSet = "ReplicaSet"
	// scaleRatioTarget bounds the CloneSet's time over the gated ReplicaSet's: readiness gates set by a
	// second writer make the plain ReplicaSet's time unreachable for any controller that uses them.
	scaleRatioTarget = 1.1
)

// scaleOrder runs the kinds as C B A B C, each on a fresh workload deleted
// before the next starts: whatever the cluster warms up or slows down
// along the way (etcd's size, the API server's caches) falls on the
// compared kinds alike, to first order. The gated ReplicaSet, the baseline
// the target holds the CloneSet to, runs twice like the CloneSet, so that
// one slow or fast run of either moves the ratio by half; the plain
// ReplicaSet in the middle shows what the readiness gates cost.
var scaleOrder = []string{kindGatedReplicaSet, kindCloneSet, kindReplicaSet, kindCloneSet, kindGatedReplicaSet}

// nativeArgs lift kube-controller-manager's and kube-scheduler's client
// limits far above what a run sends, as deployment-rollout does, so that
// client-side throttling never paces the native side. The manager's
// client has no limit (controller-runtime's default) and no flag to set one.
func nativeArgs() map[string][]string {
	return map[string][]string{
		"kube-controller-manager": {"--kube-api-qps=1000", "--kube-api-burst=2000",
			"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10"},
		"kube-scheduler": {"--kube-api-qps=1000", "--kube-api-burst=2000"},
	}
}

// cloneSetScale scales a CloneSet from 0 to 1,000 replicas, against a
// plain ReplicaSet doing the same in the same cluster.
func cloneSetScale() Scenario {
	return Scenario{
		Name: "cloneset-scale",
		Description: fmt.Sprintf("a CloneSet scaled 0 -> %d until its status shows every pod Ready and available, "+
			"against a plain ReplicaSet doing the same (a ReplicaSet warm-up, then runs %s)", clonesetReplicas, strings.Join(scaleOrder, ", ")),
		Cluster: cluster.Options{ControllerManager: true, Scheduler: true, Nodes: clonesetNodes, PodsPerNode: 110,
			Args: nativeArgs()},
		Timeout: 15 * time.Minute,
		Run:     runCloneSetScale,
	}
}

func runCloneSetScale(ctx context.Context, env *Env, res *Result) error {
	// The warm-up's ReplicaSet included.
	res.Cluster.Objects = map[string]int{"clonesets": 2, "replicasets": 3, "pods": (len(scaleOrder) + 1) * clonesetReplicas}
	dyn, kcm, err := startCloneSetScenario(ctx, env, scaleNamespace)
	if err != nil {
		return err
	}
	runs, err := runScales(ctx, env, dyn, kcm)
	if err != nil {
		return err
	}
	c, err := compareScale(runs)
	if err != nil {
		return err
	}
	res.Record(c.CloneSetPhase)
	addScaleMetrics(res, c)
	return nil
}

// runScales runs a warm-up, then scaleOrder. The warm-up (a ReplicaSet,
// not counted) takes the cluster's first 1,000 pods, which cost more
// than any later ones (etcd and the API server's caches grow, kwok and
// the scheduler start up), off the first measured run.
func runScales(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc) ([]scaleRun, error) {
	if _, err := scaleOnce(ctx, env, newScaleTarget(env, dyn, kindReplicaSet, "warm-up"), kcm); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	runs := make([]scaleRun, 0, len(scaleOrder))
	for i, kind := range scaleOrder {
		run, err := scaleOnce(ctx, env, newScaleTarget(env, dyn, kind, fmt.Sprintf("%s-%d", strings.ToLower(kind), i+1)), kcm)
		if err != nil {
			return nil, fmt.Errorf("run %d (%s): %w", i+1, kind, err)
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// scaleOnce runs one workload and deletes it with its pods.
func scaleOnce(ctx context.Context, env *Env, t scaleTarget, kcm Proc) (scaleRun, error) {
	run, err := runScale(ctx, env, t, kcm)
	if err != nil {
		return run, err
	}
	return run, removeWorkload(ctx, env, t.ns(), t.name, t.remove)
}

// scaleTarget is one workload to scale: a CloneSet, a ReplicaSet, an Advanced or a native StatefulSet.
type scaleTarget struct {
	kind, name string
	// namespace and replicas default to cloneset-scale's; counters, the manager's counters the run reports,
	// to cloneSetCounters.
	namespace string
	replicas  int32
	counters  []counterSpec
	// create makes the workload with 0 replicas; observed waits until its
	// controller has reported that generation.
	create, observed func(context.Context) error
	// follow marks the observed generation of every event whose status
	// shows all replicas Ready and available.
	follow func(context.Context, *marks) (*follower, error)
	// scale sets the replicas and returns the generation it made.
	scale  func(context.Context, int32) (int64, error)
	remove func(context.Context) error
	// helper, when set, runs beside the timed change, from before it is sent; its stop reports the writes it
	// made.
	helper func(context.Context) (stop func() (int64, error), err error)
}

func (t scaleTarget) ns() string { return cmp.Or(t.namespace, scaleNamespace) }

func (t scaleTarget) size() int32 { return cmp.Or(t.replicas, clonesetReplicas) }

func newScaleTarget(env *Env, dyn dynamic.Interface, kind, name string) scaleTarget {
	switch kind {
	case kindCloneSet:
		return cloneSetTarget(dyn, name)
	case kindGatedReplicaSet:
		return gatedReplicaSetTarget(env, name)
	}
	return replicaSetTarget(env.Kube, name)
}

func cloneSetTarget(dyn dynamic.Interface, name string) scaleTarget {
	return scaleTarget{
		kind: kindCloneSet, name: name,
		create: func(ctx context.Context) error {
			return createCloneSet(ctx, dyn, benchCloneSet(scaleNamespace, name, 0, kruiseappsv1alpha1.CloneSetUpdateStrategy{}))
		},
		observed: func(ctx context.Context) error { return waitCloneSet(ctx, dyn, scaleNamespace, name, cloneSetScaled) },
		follow: func(ctx context.Context, m *marks) (*follower, error) {
			return followCloneSet(ctx, dyn, scaleNamespace, name, generationsWhere(cloneSetScaled, m))
		},
		scale: func(ctx context.Context, n int32) (int64, error) {
			return patchCloneSet(ctx, dyn, scaleNamespace, name, types.MergePatchType, replicasPatch(n))
		},
		remove: deleteCloneSet(dyn, scaleNamespace, name),
	}
}

func replicaSetTarget(kube kubernetes.Interface, name string) scaleTarget {
	sets := kube.AppsV1().ReplicaSets(scaleNamespace)
	return scaleTarget{
		kind: kindReplicaSet, name: name,
		create: func(ctx context.Context) error {
			if _, err := sets.Create(ctx, benchReplicaSet(scaleNamespace, name, 0), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating ReplicaSet %s: %w", name, err)
			}
			return nil
		},
		observed: func(ctx context.Context) error { return waitReplicaSet(ctx, kube, name) },
		follow: func(ctx context.Context, m *marks) (*follower, error) {
			rs, err := sets.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("getting ReplicaSet %s: %w", name, err)
			}
			return follow(ctx, rs.ResourceVersion, replicaSetNamedWatch(kube, name), scaledReplicaSets(m))
		},
		scale: func(ctx context.Context, n int32) (int64, error) {
			rs, err := sets.Patch(ctx, name, types.MergePatchType, replicasPatch(n), metav1.PatchOptions{})
			if err != nil {
				return 0, fmt.Errorf("scaling ReplicaSet %s: %w", name, err)
			}
			return rs.Generation, nil
		},
		remove: func(ctx context.Context) error {
			return sets.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		},
	}
}

// benchReplicaSet is a plain ReplicaSet of the harness's pod.
func benchReplicaSet(namespace, name string, replicas int32) *appsv1.ReplicaSet {
	labels := workloadLabels(namespace, name)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: benchPodTemplate(labels),
		},
	}
}

// replicaSetScaled is cloneSetScaled for a ReplicaSet.
func replicaSetScaled(rs *appsv1.ReplicaSet) bool {
	want, s := ptr.Deref(rs.Spec.Replicas, 1), rs.Status
	return s.ObservedGeneration == rs.Generation && s.Replicas == want && s.ReadyReplicas == want && s.AvailableReplicas == want
}

func scaledReplicaSets(m *marks) handler {
	return func(at time.Time, obj runtime.Object) {
		if rs, ok := obj.(*appsv1.ReplicaSet); ok && replicaSetScaled(rs) {
			m.add(rs.Status.ObservedGeneration, at)
		}
	}
}

func waitReplicaSet(ctx context.Context, kube kubernetes.Interface, name string) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, clonesetRunTimeout, true, func(ctx context.Context) (bool, error) {
		rs, err := kube.AppsV1().ReplicaSets(scaleNamespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil && replicaSetScaled(rs), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for ReplicaSet %s to be observed: %w", name, err)
	}
	return nil
}

func replicaSetNamedWatch(kube kubernetes.Interface, name string) cache.WatchFuncWithContext {
	return func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		return kube.AppsV1().ReplicaSets(scaleNamespace).Watch(ctx, opts)
	}
}

// runScale creates the workload with 0 replicas, then times scaling it to
// its size until its status shows them all Ready and available.
func runScale(ctx context.Context, env *Env, t scaleTarget, kcm Proc) (scaleRun, error) {
	ctx, cancel := context.WithTimeout(ctx, clonesetRunTimeout)
	defer cancel()
	if err := t.create(ctx); err != nil {
		return scaleRun{}, err
	}
	if err := t.observed(ctx); err != nil {
		return scaleRun{}, err
	}
	stopHelper := func() (int64, error) { return 0, nil }
	if t.helper != nil {
		stop, err := t.helper(ctx)
		if err != nil {
			return scaleRun{}, err
		}
		stopHelper = stop
	}
	env.Logf("%s %s: scaling 0 -> %d", t.kind, t.name, t.size())
	run, phase, err := timeWorkloadChange(ctx, env, kcm, timedChange{
		namespace: t.ns(), name: t.name, pods: newPodProgress(anyPod, isPodReady), status: t.follow, counters: t.counters,
		settle: clonesetSettle, change: func(ctx context.Context) (int64, error) { return t.scale(ctx, t.size()) },
	})
	helperWrites, herr := stopHelper()
	if err = errors.Join(err, herr); err != nil {
		return scaleRun{}, err
	}
	fig, err := analyseRun(run, int64(t.size()))
	if err != nil {
		return scaleRun{}, fmt.Errorf("%s %s: %w", t.kind, t.name, err)
	}
	logRun(env, t.kind+" "+t.name, fig, phase, "created")
	if t.helper != nil {
		env.Logf("%s %s: the harness wrote %d pod statuses", t.kind, t.name, helperWrites)
	}
	return scaleRun{Kind: t.kind, Figures: fig, Phase: phase, Counters: run.Counters}, nil
}

// timedChange is a change to one workload, timed from sending it to the
// workload's status showing it done.
type timedChange struct {
	namespace, name string
	// pods counts the workload's pods as the change reaches them.
	pods *podProgress
	// status follows the workload, marking the observed generation of
	// every event that shows the change done.
	status func(context.Context, *marks) (*follower, error)
	// settle is waited between starting the watches and the change.
	settle time.Duration
	// change sends the change and returns the generation it made.
	change func(context.Context) (int64, error)
	// counters are the manager's counters whose rises the run records; nil: cloneSetCounters.
	counters []counterSpec
}

// timeWorkloadChange follows the workload and its pods, and measures the
// change as the scenario's phase.
func timeWorkloadChange(ctx context.Context, env *Env, kcm Proc, c timedChange) (workloadRun, Phase, error) {
	done := newMarks()
	stop, err := startFollowers(
		func() (*follower, error) { return followPods(ctx, env, c.namespace, c.name, c.pods) },
		func() (*follower, error) { return c.status(ctx, done) })
	if err != nil {
		return workloadRun{}, Phase{}, err
	}
	if err := sleep(ctx, c.settle); err != nil {
		return workloadRun{}, Phase{}, errors.Join(err, stop())
	}
	var run workloadRun
	phase, err := env.Measure(ctx, []Proc{kcm}, func(ctx context.Context) error {
		return timeChange(ctx, env, &run, done, c.counters, func() (int64, error) { return c.change(ctx) })
	})
	if err = errors.Join(err, stop()); err != nil {
		return run, phase, err
	}
	run.Started, run.Finished = c.pods.starts.all(), c.pods.finishes.all()
	return run, phase, nil
}

// timeChange sends the change and waits for the status event of the
// generation it made, reading the manager's counters (nil: cloneSetCounters) at both ends.
func timeChange(ctx context.Context, env *Env, run *workloadRun, done *marks, counters []counterSpec, change func() (int64, error)) error {
	before, err := env.ManagerSamples(ctx)
	if err != nil {
		return err
	}
	run.Start = time.Now()
	gen, err := change()
	if err != nil {
		return err
	}
	m, err := done.await(ctx, gen)
	if err != nil {
		return fmt.Errorf("waiting for the status of generation %d: %w", gen, err)
	}
	run.Done = m.At
	after, err := env.ManagerSamples(ctx)
	if err != nil {
		return err
	}
	if counters == nil {
		counters = cloneSetCounters
	}
	run.Counters = counterRises(counters, before, after)
	return nil
}

// startFollowers starts watches in order; on failure it stops those
// already started. The returned stop ends them all.
func startFollowers(starts ...func() (*follower, error)) (func() error, error) {
	var started []*follower
	stop := func() error {
		var errs []error
		for _, f := range started {
			errs = append(errs, f.stop())
		}
		return errors.Join(errs...)
	}
	for _, start := range starts {
		f, err := start()
		if err != nil {
			return nil, errors.Join(err, stop())
		}
		started = append(started, f)
	}
	return stop, nil
}

func logRun(env *Env, what string, fig runFigures, phase Phase, started string) {
	env.Logf("%s: %v (all pods %s %v, all Ready %v, status +%v); manager %d writes",
		what, fig.Total.Round(time.Millisecond), started, fig.AllStarted.Round(time.Millisecond),
		fig.AllFinished.Round(time.Millisecond), fig.StatusLag.Round(time.Millisecond), writes(phase.Requests))
}

// addScaleMetrics adds the figures: times against the
// ReplicaSet's, the manager's writes, RSS and CPU against
// kube-controller-manager's while it scaled the ReplicaSets.
func addScaleMetrics(res *Result, c scaleComparison) {
	cs, rs := c.CloneSet, c.ReplicaSet
	res.Add(
		Metric{Name: "CloneSet 0 -> 1000 Ready", Unit: UnitSeconds, Value: cs.Total.Seconds(),
			Note: "scale sent -> status Ready and available at the current generation; mean of each kind's runs: " + c.Order}.
			Compared("ReplicaSet", rs.Total.Seconds()),
		Metric{Name: "all pods created", Unit: UnitSeconds, Value: cs.AllStarted.Seconds(), Note: "scale sent -> last pod's creation seen"}.
			Compared("ReplicaSet", rs.AllStarted.Seconds()),
		Metric{Name: "all pods Ready", Unit: UnitSeconds, Value: cs.AllFinished.Seconds(), Note: "scale sent -> last pod seen Ready"}.
			Compared("ReplicaSet", rs.AllFinished.Seconds()),
		Metric{Name: "status lag", Unit: UnitSeconds, Value: cs.StatusLag.Seconds(), Note: "last pod seen Ready -> the status showing it"}.
			Compared("ReplicaSet", rs.StatusLag.Seconds()),
	)
	if c.GatedRuns > 0 {
		res.Add(
			Metric{Name: "gated ReplicaSet 0 -> 1000 Ready", Unit: UnitSeconds, Value: c.Gated.Total.Seconds(),
				Note: "a ReplicaSet whose pods carry two readiness gates, set True by the harness in one status write per pod: the gates' cost alone"}.
				Compared("ReplicaSet", rs.Total.Seconds()),
			Metric{Name: "CloneSet against the gated ReplicaSet", Unit: UnitSeconds, Value: cs.Total.Seconds(),
				Note: "the CloneSet's time over what its pods' readiness gates cost with no controller at all"}.
				Compared("gated ReplicaSet", c.Gated.Total.Seconds()).WithRatioTarget(scaleRatioTarget),
		)
	}
	pods := c.CloneSetRuns * clonesetReplicas
	m, k := c.CloneSetPhase.Usage[ManagerName], c.ReplicaSetPhase.Usage[ControllerManagerName]
	res.Add(
		Metric{Name: "manager writes per pod", Unit: UnitPerPod, Value: float64(writes(c.CloneSetPhase.Requests)) / float64(pods),
			Note: fmt.Sprintf("%d pods: %s", pods, perPodWrites(c.CloneSetPhase.Requests, pods))},
		Metric{Name: "manager peak RSS (CloneSet runs)", Unit: UnitBytes, Value: float64(m.PeakRSSBytes)}.
			Compared(ControllerManagerName+" in the ReplicaSet runs", float64(k.PeakRSSBytes)),
		Metric{Name: "manager CPU per scale-up", Unit: UnitSeconds, Value: m.CPUSeconds / float64(max(c.CloneSetRuns, 1)),
			Note: "CPU seconds per 1000 pods; " + usageNote(ManagerName, m) + " (CloneSet runs); " +
				usageNote(ControllerManagerName, k) + " (ReplicaSet runs)"}.
			Compared(ControllerManagerName, k.CPUSeconds/float64(max(c.ReplicaSetRuns, 1))),
		Metric{Name: "manager API writes during the ReplicaSet runs", Unit: UnitCount, Value: float64(writes(c.ReplicaSetPhase.Requests)),
			Note: "the ReplicaSets are not the manager's to touch"},
	)
	res.Add(counterMetrics(cloneSetCounters, c.CloneSetCounters, "", fmt.Sprintf("sum of the %d CloneSet runs", c.CloneSetRuns))...)
}
