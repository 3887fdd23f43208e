package bench

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/cluster"
)

const (
	releaseNamespace = "bench-rollout"
	// Populate names its Deployments app-0000, app-0001, ...: the first
	// is the floor, the second is released by the Rollout of that name.
	floorWorkload   = "app-0000"
	releaseWorkload = "app-0001"
	releaseRollout  = releaseWorkload
	// releaseID is the rollout-id the change carries, so that the
	// engine labels each pod with its batch.
	releaseID = "v2"
	// releaseSettle lets the manager's caches and kube-controller-manager
	// go quiet before a run.
	releaseSettle = 10 * time.Second
	// releaseRunTimeout bounds one run of a canary, a floor's or a Rollout's (release1k's; see releaseScale).
	releaseRunTimeout = 5 * time.Minute
	// watchConnect gives the watches time to connect before the change,
	// so that early events are stamped when they happen rather than when
	// a late watch catches up.
	watchConnect     = time.Second
	finalisingTarget = 500 * time.Millisecond
)

// releaseScale is a release scenario's size and the targets its issue sets.
type releaseScale struct {
	replicas   int // of each of the two Deployments
	nodes      int // of 110 pods: room for both Deployments and the released one's 25% surge
	ratio      float64
	transition time.Duration // step transition median
	// stepWrites bounds each step's manager writes beyond one per pod of its batch; writesPerPod bounds the
	// release's writes per replica. Zero leaves either out.
	stepWrites   int
	writesPerPod float64
	rss          float64
	runTimeout   time.Duration // of one run, the floor's or the Rollout's
}

var (
	// release1k is deployment-rollout's: a thousand replicas.
	release1k = releaseScale{replicas: 1000, nodes: 25, ratio: 1.15, transition: 50 * time.Millisecond,
		stepWrites: 15, rss: 120 << 20, runTimeout: releaseRunTimeout}
	// release10k is deployment-rollout-10k's (issue 30): ten thousand replicas. At its peak the floor's change
	// holds 25,000 pods (the other Deployment's 10,000, 12,500 with the surge, 2,500 terminating): 300 nodes of
	// 110 leave the scheduler room; with 230, one floor change still had thousands of pods unscheduled after
	// 14 minutes, where with 300 it takes about four and a half.
	release10k = releaseScale{replicas: 10000, nodes: 300, ratio: 1.05, transition: 15 * time.Millisecond,
		writesPerPod: 0.05, rss: 250 << 20, runTimeout: 15 * time.Minute}
)

// releaseSteps are the Rollout's steps: the share of pods on the new
// template once each is done.
var releaseSteps = []string{"10%", "30%", "60%", "100%"}

// releaseChange is the change the runs apply: a new pod template (an
// environment variable set to version) and, withID, the rollout-id version.
func releaseChange(withID bool, version string) []byte {
	annotation := ""
	if withID {
		annotation = `"metadata":{"annotations":{"` + rolloutsv1beta1.RolloutIDLabel + `":"` + version + `"}},`
	}
	return []byte(`{` + annotation +
		`"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"VERSION","value":"` + version + `"}]}]}}}}`)
}

// floorAgainID is the version of the plain Deployment's second change, after the release.
const floorAgainID = "v3"

var (
	rolloutTypeMeta       = metav1.TypeMeta{APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: "Rollout"}
	rolloutsResource      = rolloutsv1beta1.GroupVersion.WithResource("rollouts")
	batchReleasesResource = rolloutsv1beta1.GroupVersion.WithResource("batchreleases")
)

// deploymentRollout releases a 1,000-replica Deployment through a
// partition-style Rollout, next to the same change on a plain Deployment.
// Without an ID the change carries no rollout-id, so the engine labels no
// pod: the difference between the two scenarios is what the labels cost.
func deploymentRollout(withID bool) Scenario {
	name, what := "deployment-rollout", "a %d-replica Deployment released by a partition-style Rollout (steps %v, pause 0) "+
		"against the same template change on a plain Deployment, in the same cluster"
	if !withID {
		name, what = "deployment-rollout-no-id", "deployment-rollout with a change that carries no rollout-id, so that no pod "+
			"is labelled with its batch (%d replicas, steps %v)"
	}
	return releaseScenario(name, fmt.Sprintf(what, release1k.replicas, releaseSteps), release1k, withID, 15*time.Minute)
}

// deploymentRollout10k is deployment-rollout at ten thousand replicas.
func deploymentRollout10k() Scenario {
	what := "deployment-rollout at %d replicas: a partition-style Rollout (steps %v, pause 0) against the same change on a plain Deployment"
	s := releaseScenario("deployment-rollout-10k", fmt.Sprintf(what, release10k.replicas, releaseSteps), release10k, true, 45*time.Minute)
	s.Scale = true
	return s
}

func releaseScenario(name, description string, sc releaseScale, withID bool, timeout time.Duration) Scenario {
	return Scenario{
		Name:        name,
		Description: description,
		Cluster: cluster.Options{
			ControllerManager: true, Scheduler: true, Nodes: sc.nodes, PodsPerNode: 110,
			Args: map[string][]string{
				// Far above what either run sends, so that client-side
				// throttling never paces the floor.
				"kube-controller-manager": {"--kube-api-qps=1000", "--kube-api-burst=2000",
					"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10"},
				"kube-scheduler": {"--kube-api-qps=1000", "--kube-api-burst=2000"},
			},
		},
		Timeout: timeout,
		Run: func(ctx context.Context, env *Env, res *Result) error {
			return runDeploymentRollout(ctx, env, res, sc, withID)
		},
	}
}

// runDeploymentRollout times the plain Deployment's change, the release, then the plain Deployment's change
// again: the floor is the mean of the two, so that a cluster that drifts along the scenario weighs on both
// sides alike, and one run's luck on one side less.
func runDeploymentRollout(ctx context.Context, env *Env, res *Result, sc releaseScale, withID bool) error {
	res.Cluster.Objects = map[string]int{"deployments": 2, "pods": 2 * sc.replicas, "rollouts": 1}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return fmt.Errorf("creating a dynamic client: %w", err)
	}
	if err := setUpRelease(ctx, env, dyn, res, sc.replicas); err != nil {
		return err
	}
	kcm, err := env.ControllerManagerProc()
	if err != nil {
		return err
	}
	before, err := runFloorChange(ctx, env, kcm, sc, releaseChange(withID, releaseID))
	if err != nil {
		return err
	}
	run, err := measureRelease(ctx, env, dyn, kcm, res, sc, releaseChange(withID, releaseID))
	if err != nil {
		return err
	}
	fig, err := analyseRelease(run.timeline, releaseTargets(sc.replicas))
	if err != nil {
		return err
	}
	if err := settle(ctx, env, sc.replicas); err != nil {
		return err
	}
	after, err := runFloorChange(ctx, env, kcm, sc, releaseChange(withID, floorAgainID))
	if err != nil {
		return err
	}
	floors := []floorRun{before, after}
	logRelease(env, fig, floors)
	addReleaseMetrics(res, fig, floors, run.phase, sc)
	return verifyReleased(ctx, env, res, sc.replicas)
}

// measureRelease runs the Rollout's release and records its phase.
func measureRelease(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc, res *Result, sc releaseScale, change []byte) (releaseRun, error) {
	if err := settle(ctx, env, sc.replicas); err != nil {
		return releaseRun{}, err
	}
	run, err := runRelease(ctx, env, dyn, kcm, sc, change)
	res.Record(run.phase)
	return run, err
}

// settle waits for every pod of both Deployments to run, then a little more.
func settle(ctx context.Context, env *Env, replicas int) error {
	if err := awaitPods(ctx, env, 2*replicas); err != nil {
		return err
	}
	return sleep(ctx, releaseSettle)
}

// releaseTargets are the updated pods each step asks for.
func releaseTargets(replicas int) []int32 {
	out := make([]int32, 0, len(releaseSteps))
	for _, s := range releaseSteps {
		v := intstr.FromString(s)
		// The percentages are constants that parse; a failure would show as a zero step.
		n, _ := intstr.GetScaledValueFromIntOrPercent(&v, replicas, true)
		out = append(out, int32(n)) //nolint:gosec // <= replicas
	}
	return out
}

// setUpRelease creates both Deployments, starts the manager and puts the
// Rollout in place, Healthy.
func setUpRelease(ctx context.Context, env *Env, dyn dynamic.Interface, res *Result, replicas int) error {
	took, err := Populate(ctx, env, releaseNamespace, 2, replicas)
	if err != nil {
		return err
	}
	res.Add(Metric{Name: "pods Running and Ready", Unit: UnitSeconds, Value: took.Seconds(),
		Note: fmt.Sprintf("setup: 2 Deployments of %d replicas", replicas)})
	if err := env.StartManager(ctx); err != nil {
		return err
	}
	if err := createRollout(ctx, dyn); err != nil {
		return err
	}
	if err := waitRolloutHealthy(ctx, dyn); err != nil {
		return err
	}
	return sleep(ctx, releaseSettle)
}

// releaseRolloutObject is the v1beta1 Rollout of the released Deployment;
// partition is v1beta1's default style for a Deployment.
func releaseRolloutObject() *rolloutsv1beta1.Rollout {
	steps := make([]rolloutsv1beta1.CanaryStep, 0, len(releaseSteps))
	for _, s := range releaseSteps {
		steps = append(steps, rolloutsv1beta1.CanaryStep{
			Replicas: ptr.To(intstr.FromString(s)),
			Pause:    rolloutsv1beta1.RolloutPause{Duration: ptr.To[int32](0)},
		})
	}
	return &rolloutsv1beta1.Rollout{
		TypeMeta:   rolloutTypeMeta,
		ObjectMeta: benchObjectMeta(releaseNamespace, releaseRollout),
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: releaseWorkload},
			Strategy:    rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{Steps: steps}},
		},
	}
}

func createRollout(ctx context.Context, dyn dynamic.Interface) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(releaseRolloutObject())
	if err != nil {
		return fmt.Errorf("encoding the Rollout: %w", err)
	}
	u := &unstructured.Unstructured{Object: obj}
	if _, err := dyn.Resource(rolloutsResource).Namespace(releaseNamespace).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Rollout %s: %w", releaseRollout, err)
	}
	return nil
}

// waitRolloutHealthy waits until the manager has taken the Rollout on:
// Healthy, which it writes after labelling the Deployment for the webhooks.
func waitRolloutHealthy(ctx context.Context, dyn dynamic.Interface) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ro, err := getRollout(ctx, dyn)
		if err != nil {
			return false, nil // retried until the timeout
		}
		return ro.Status.ObservedGeneration == ro.Generation && ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for Rollout %s to be Healthy: %w", releaseRollout, err)
	}
	return nil
}

func getRollout(ctx context.Context, dyn dynamic.Interface) (*rolloutsv1beta1.Rollout, error) {
	u, err := dyn.Resource(rolloutsResource).Namespace(releaseNamespace).Get(ctx, releaseRollout, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("getting Rollout %s: %w", releaseRollout, err)
	}
	return rolloutFrom(u)
}

func rolloutFrom(obj runtime.Object) (*rolloutsv1beta1.Rollout, error) {
	return decode[rolloutsv1beta1.Rollout](obj)
}

// decode converts an object of the dynamic client to its type.
func decode[T any](obj runtime.Object) (*T, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected %T for a %T", obj, new(T))
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("decoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return out, nil
}

// applyChange patches a Deployment with the release's change.
func applyChange(ctx context.Context, env *Env, name string, change []byte) (*appsv1.Deployment, error) {
	d, err := env.Kube.AppsV1().Deployments(releaseNamespace).Patch(ctx, name, types.StrategicMergePatchType, change, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("changing deployment %s: %w", name, err)
	}
	return d, nil
}

// awaitPods waits until the namespace holds n pods, e.g. until the pods a
// run replaced are gone: two minutes, and a second more per hundred pods.
func awaitPods(ctx context.Context, env *Env, n int) error {
	bound := 2*time.Minute + time.Duration(n/100)*time.Second
	err := wait.PollUntilContextTimeout(ctx, time.Second, bound, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Kube.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil // retried until the timeout
		}
		return len(pods.Items) == n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d pods in %s: %w", n, releaseNamespace, err)
	}
	return nil
}

// verifyReleased checks that Completed meant it: the Deployment is back
// with kube-controller-manager, every pod updated and available, and
// counts the pods labelled with their batch.
func verifyReleased(ctx context.Context, env *Env, res *Result, replicas int) error {
	d, err := env.Kube.AppsV1().Deployments(releaseNamespace).Get(ctx, releaseWorkload, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("getting deployment %s: %w", releaseWorkload, err)
	}
	pods, err := env.Kube.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: rolloutsv1beta1.RolloutIDLabel + "=" + releaseID,
	})
	if err != nil {
		return fmt.Errorf("listing labelled pods: %w", err)
	}
	res.Add(Metric{Name: "pods labelled with their batch", Unit: UnitCount, Value: float64(len(pods.Items)),
		Note: fmt.Sprintf("of %d; the engine labels pods only for a release with a rollout-id", replicas)})
	return checkReleased(d, int32(replicas)) //nolint:gosec // a scenario's replica count
}

func checkReleased(d *appsv1.Deployment, replicas int32) error {
	s := d.Status
	if d.Spec.Paused || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		d.Annotations[rolloutsv1beta1.DeploymentStrategyAnnotation] != "" ||
		s.UpdatedReplicas != replicas || s.AvailableReplicas != replicas {
		return fmt.Errorf("the release reported Completed but deployment %s is paused=%t, strategy %s, %d updated, %d available",
			d.Name, d.Spec.Paused, d.Spec.Strategy.Type, s.UpdatedReplicas, s.AvailableReplicas)
	}
	return nil
}
