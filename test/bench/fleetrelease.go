package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/cluster"
)

const (
	// Targets of issue 30's fleet release.
	fleetReleaseRatioTarget  = 1.2
	fleetStarvationTarget    = 2.0
	fleetWritesTarget        = 30
	fleetReleaseRSSTarget    = 300 << 20
	fleetReleaseTimeout      = 10 * time.Minute
	fleetPatchWorkers        = 32
	fleetQueueSampleInterval = time.Second
)

// fleetRelease changes the template of 1,000 Deployments at once, first without Rollouts (kube-controller-
// manager alone), then with a Rollout on each, and compares when the last one is done.
func fleetRelease() Scenario {
	return Scenario{
		Name: "fleet-release",
		Description: fmt.Sprintf("one template change applied to %d Deployments of %d replicas at once, each released by its own "+
			"Rollout (two steps, pause 0, half with an nginx Ingress canary), against the same change without Rollouts",
			fleetSize, fleetReplicas),
		Cluster: cluster.Options{ControllerManager: true, Scheduler: true, Nodes: 125, PodsPerNode: 110,
			Args: nativeArgs()},
		Timeout: 40 * time.Minute,
		Scale:   true,
		Run:     runFleetRelease,
	}
}

func runFleetRelease(ctx context.Context, env *Env, res *Result) error {
	res.Cluster.Objects = map[string]int{"deployments": fleetSize, "pods": fleetSize * fleetReplicas,
		"rollouts": fleetSize, "services": fleetSize / 2, "ingresses": fleetSize / 2}
	procs, err := clusterProcs()
	if err != nil {
		return err
	}
	native, err := runNativeFleetChange(ctx, env, res, procs)
	if err != nil {
		return err
	}
	if err := setUpFleetRollouts(ctx, env, res); err != nil {
		return err
	}
	release, err := runFleetRollouts(ctx, env, procs)
	res.Record(release.phase)
	if err != nil {
		return err
	}
	addFleetReleaseMetrics(res, native, release)
	return nil
}

// runNativeFleetChange populates the fleet, with the applications' own Services and Ingresses, and times the
// change with no manager running. The Services are there for both changes: kube-controller-manager keeps
// their EndpointSlices with every pod, which is the cluster's work, not the Rollouts'.
func runNativeFleetChange(ctx context.Context, env *Env, res *Result, procs []Proc) (fleetRun, error) {
	if err := populateFleet(ctx, env, res); err != nil {
		return fleetRun{}, err
	}
	if err := sleep(ctx, releaseSettle); err != nil {
		return fleetRun{}, err
	}
	env.Logf("the same change on %d Deployments without Rollouts", fleetSize)
	run, err := changeFleet(ctx, env, procs, "v2", deploymentsDone(env))
	if err == nil && len(run.done) > 0 {
		env.Logf("without Rollouts: %d Deployments rolled out, the last after %v, the median after %v", len(run.done),
			run.done[len(run.done)-1].Round(time.Millisecond), run.done[len(run.done)/2].Round(time.Millisecond))
	}
	return run, err
}

// setUpFleetRollouts starts the manager and gives each Deployment its Rollout, then waits until every Rollout
// is Healthy and a little more.
func setUpFleetRollouts(ctx context.Context, env *Env, res *Result) error {
	if err := env.StartManager(ctx); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return fmt.Errorf("creating a dynamic client: %w", err)
	}
	begin := time.Now()
	if err := createFleetRollouts(ctx, dyn); err != nil {
		return err
	}
	if err := waitFleetHealthy(ctx, env, dyn); err != nil {
		return err
	}
	res.Add(Metric{Name: "Rollouts created -> all Healthy", Unit: UnitSeconds, Value: time.Since(begin).Seconds(),
		Note: fmt.Sprintf("setup: %d Rollouts taken on by the manager", fleetSize)})
	return sleep(ctx, releaseSettle)
}

// runFleetRollouts times the change released by every Rollout, sampling the manager's work queues meanwhile.
func runFleetRollouts(ctx context.Context, env *Env, procs []Proc) (fleetRun, error) {
	env.Logf("the change on %d Deployments, each released by its Rollout", fleetSize)
	before, err := env.ManagerSamples(ctx)
	if err != nil {
		return fleetRun{}, err
	}
	queues := sampleQueues(ctx, env)
	begin := time.Now()
	run, err := changeFleet(ctx, env, procs, "v3", rolloutsDone(env))
	run.queues = queues.stop()
	if err != nil {
		return run, err
	}
	if run.events, err = fleetEvents(ctx, env, begin); err != nil {
		return run, err
	}
	for _, c := range run.events {
		env.Logf("events: %s %d", c.Key, c.Count)
	}
	after, err := env.ManagerSamples(ctx)
	run.counters = counterRises(fleetCounters, before, after)
	return run, err
}

// fleetRun is one timed change of the whole fleet.
type fleetRun struct {
	phase    Phase
	done     []time.Duration // per application, from the first patch
	queues   queueFigures
	counters []float64
	events   []reasonCount // created during the run, the most frequent first
	stages   map[stageSpan]spanFigure
}

// doneWatch watches the objects that say an application is done; done reports an object that does.
type doneWatch struct {
	list  func(context.Context) (string, error)
	watch cache.WatchFuncWithContext
	done  func(runtime.Object) (string, bool)
	// stage names the milestone an object shows on its way (rolloutStage); nil when none is followed.
	stage func(runtime.Object) (string, string)
}

// changeFleet applies version's template change to every Deployment and waits until the watch has seen
// every application done.
func changeFleet(ctx context.Context, env *Env, procs []Proc, version string, w doneWatch) (fleetRun, error) {
	rv, err := w.list(ctx)
	if err != nil {
		return fleetRun{}, err
	}
	var run fleetRun
	run.phase, err = env.Measure(ctx, procs, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, fleetReleaseTimeout)
		defer cancel()
		begin := time.Now()
		seen, err := followDone(ctx, rv, w)
		if err != nil {
			return err
		}
		if err := patchFleet(ctx, env, releaseChange(false, version)); err != nil {
			return err
		}
		run.done, err = seen.wait(ctx, begin)
		run.stages = stageMedians(begin, seen.milestones())
		return err
	})
	return run, err
}

// clusterComponents are the cluster's processes a fleet change measures besides the manager: the machine's
// cores are all theirs, so their sum tells whether the change ran out of CPU.
var clusterComponents = []string{ControllerManagerName, "kube-apiserver", "etcd", "kube-scheduler", "kwok"}

func clusterProcs() ([]Proc, error) {
	procs := make([]Proc, 0, len(clusterComponents))
	for _, name := range clusterComponents {
		pid, err := FindChild(name)
		if err != nil {
			return nil, err
		}
		procs = append(procs, Proc{Name: name, PID: pid})
	}
	return procs, nil
}

func patchFleet(ctx context.Context, env *Env, change []byte) error {
	return patchApps(ctx, env, fleetNamespace, fleetSize, change)
}

// patchApps applies a strategic merge patch to the Deployments of applications 0 to n-1 of namespace.
func patchApps(ctx context.Context, env *Env, namespace string, n int, change []byte) error {
	deployments := env.Kube.AppsV1().Deployments(namespace)
	return forApps(ctx, n, fleetPatchWorkers, func(ctx context.Context, i int) error {
		_, err := deployments.Patch(ctx, fleetApp(i), types.StrategicMergePatchType, change, metav1.PatchOptions{})
		return err
	})
}

// doneSet records when each application was first seen done, and at each milestone on its way.
type doneSet struct {
	mu    sync.Mutex
	at    map[string]time.Time
	marks map[string]map[string]time.Time
	full  chan struct{}
	err   chan error
}

func followDone(ctx context.Context, rv string, w doneWatch) (*doneSet, error) {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{WatchFuncWithContext: w.watch})
	if err != nil {
		return nil, err
	}
	s := &doneSet{at: map[string]time.Time{}, marks: map[string]map[string]time.Time{}, full: make(chan struct{}),
		err: make(chan error, 1)}
	go s.consume(ctx, rw, w)
	return s, nil
}

func (s *doneSet) consume(ctx context.Context, rw *watchtools.RetryWatcher, w doneWatch) {
	defer rw.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-rw.ResultChan():
			if !ok {
				s.err <- fmt.Errorf("the watch ended")
				return
			}
			if ev.Type == watch.Error {
				continue
			}
			if w.stage != nil {
				s.milestone(w.stage(ev.Object))
			}
			if name, ok := w.done(ev.Object); ok && s.mark(name, time.Now()) {
				close(s.full)
				return
			}
		}
	}
}

// milestone records the first time name showed stage.
func (s *doneSet) milestone(name, stage string) {
	if stage == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.marks[name]
	if m == nil {
		m = map[string]time.Time{}
		s.marks[name] = m
	}
	if _, ok := m[stage]; !ok {
		m[stage] = time.Now()
	}
}

// milestones are the milestones seen, Healthy (done) included.
func (s *doneSet) milestones() map[string]map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]map[string]time.Time, len(s.marks))
	for name, m := range s.marks {
		out[name] = maps.Clone(m)
	}
	for name, at := range s.at {
		if out[name] == nil {
			out[name] = map[string]time.Time{}
		}
		out[name][stageHealthy] = at
	}
	return out
}

// mark records name's first done and reports whether that completes the fleet.
func (s *doneSet) mark(name string, at time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.at[name]; !ok {
		s.at[name] = at
	}
	return len(s.at) == fleetSize
}

// wait returns each application's time from begin once all are done, or those done when ctx's deadline passes.
func (s *doneSet) wait(ctx context.Context, begin time.Time) ([]time.Duration, error) {
	select {
	case <-s.full:
	case err := <-s.err:
		return nil, err
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ctx.Err()
		}
		// The bound passed: what was done within it is the figure (the metrics report the rest as missed).
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]time.Duration, 0, fleetSize)
	for _, at := range s.at {
		out = append(out, at.Sub(begin))
	}
	slices.Sort(out)
	return out, nil
}

// deploymentsDone: a Deployment is done when every replica runs the newest template and is available.
func deploymentsDone(env *Env) doneWatch {
	deployments := env.Kube.AppsV1().Deployments(fleetNamespace)
	return doneWatch{
		list: func(ctx context.Context) (string, error) {
			l, err := deployments.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				return "", err
			}
			return l.ResourceVersion, nil
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return deployments.Watch(ctx, o)
		},
		done: func(obj runtime.Object) (string, bool) {
			d, ok := obj.(*appsv1.Deployment)
			if !ok {
				return "", false
			}
			return d.Name, deploymentRolledOut(d)
		},
	}
}

func deploymentRolledOut(d *appsv1.Deployment) bool {
	want := *d.Spec.Replicas
	st := d.Status
	return d.Generation > 1 && st.ObservedGeneration == d.Generation && st.UpdatedReplicas == want &&
		st.Replicas == want && st.AvailableReplicas == want
}

// rolloutsDone: a Rollout is done when it is Healthy with its release completed.
func rolloutsDone(env *Env) doneWatch {
	dyn := dynamic.NewForConfigOrDie(env.Config)
	rollouts := dyn.Resource(rolloutsResource).Namespace(fleetNamespace)
	return doneWatch{
		list: func(ctx context.Context) (string, error) {
			l, err := rollouts.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				return "", err
			}
			return l.GetResourceVersion(), nil
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return rollouts.Watch(ctx, o)
		},
		done: func(obj runtime.Object) (string, bool) {
			ro, err := rolloutFrom(obj)
			if err != nil {
				return "", false
			}
			return ro.Name, rolloutReleased(ro)
		},
		stage: rolloutStage,
	}
}

func rolloutReleased(ro *rolloutsv1beta1.Rollout) bool {
	sub := ro.Status.CanaryStatus
	return ro.Status.ObservedGeneration == ro.Generation && ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy &&
		sub != nil && sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted && sub.FinalisingStep == ""
}
