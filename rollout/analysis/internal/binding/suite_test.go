package binding

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 30 * time.Second

// TestMain runs one control plane for the package: the API server and etcd. Neither the Rollout engine nor
// the AnalysisRun controller runs: the tests write the Rollouts' and the runs' status themselves.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

// env is one test's cluster view: a direct client and the namespace the test's controller watches.
type env struct {
	c  client.Client
	ns string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	e := &env{c: managertest.DirectClient(t, clusterConfig, scheme(t))}
	e.ns = managertest.Namespace(t, e.c, "binding")
	return e
}

func scheme(t *testing.T) *runtime.Scheme {
	return managertest.Scheme(t, clientgoscheme.AddToScheme, analysisv1alpha1.AddToScheme, rolloutsv1beta1.AddToScheme)
}

// start runs the RolloutAnalysis controller on the test's namespace until t ends (a subtest's end stops it:
// that is how a test restarts the manager).
func (e *env) start(t *testing.T) {
	t.Helper()
	managertest.Start(t, clusterConfig, scheme(t), (&Reconciler{}).SetupWithManager, func(o *ctrl.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{e.ns: {}}
	})
}

// rolloutName names every test's Rollout.
const rolloutName = "checkout"

// newRollout creates a canary Rollout of Deployment web with two steps.
func (e *env) newRollout(t *testing.T) {
	t.Helper()
	ro := &rolloutsv1beta1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: rolloutName, Namespace: e.ns},
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{Steps: []rolloutsv1beta1.CanaryStep{
				{Replicas: ptr.To(intstr.FromInt32(1))}, {Replicas: ptr.To(intstr.FromString("100%"))},
			}}},
		},
	}
	managertest.Create(t, e.c, ro)
}

// release writes the Rollout's status: releasing rev at step in state (phase Progressing), or, with state
// Completed, done (phase Healthy).
func (e *env) release(t *testing.T, rev string, step int32, state rolloutsv1beta1.CanaryStepState) {
	t.Helper()
	ro := &rolloutsv1beta1.Rollout{}
	if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: rolloutName}, ro); err != nil {
		t.Fatal(err)
	}
	phase := rolloutsv1beta1.RolloutPhaseProgressing
	if state == rolloutsv1beta1.CanaryStepStateCompleted {
		phase = rolloutsv1beta1.RolloutPhaseHealthy
	}
	cs := &rolloutsv1beta1.CanaryStatus{CanaryRevision: rev}
	cs.StableRevision, cs.PodTemplateHash, cs.CurrentStepIndex, cs.CurrentStepState, cs.NextStepIndex = "stable0", rev, step, state, step+1
	ro.Status = rolloutsv1beta1.RolloutStatus{ObservedGeneration: ro.Generation, Phase: phase, CanaryStatus: cs,
		CurrentStepIndex: step, CurrentStepState: state}
	if err := e.c.Status().Update(t.Context(), ro); err != nil {
		t.Fatal(err)
	}
}

// setRun writes a run's status, playing the AnalysisRun controller's part.
func (e *env) setRun(t *testing.T, name string, phase analysisv1alpha1.AnalysisPhase, msg string) {
	t.Helper()
	run := e.waitRunExists(t, name)
	run.Status.Phase, run.Status.Message = phase, msg
	if err := e.c.Status().Update(t.Context(), run); err != nil {
		t.Fatal(err)
	}
}

func (e *env) waitRunExists(t *testing.T, name string) *analysisv1alpha1.AnalysisRun {
	t.Helper()
	run := &analysisv1alpha1.AnalysisRun{}
	managertest.Eventually(t, itTimeout, "run "+name, func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, run)
		return err == nil, err
	})
	return run
}

// runs are the names of the namespace's runs.
func (e *env) runs(t *testing.T) map[string]*analysisv1alpha1.AnalysisRun {
	t.Helper()
	list := &analysisv1alpha1.AnalysisRunList{}
	if err := e.c.List(t.Context(), list, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]*analysisv1alpha1.AnalysisRun{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// waitStatus waits until the RolloutAnalysis's status satisfies done and returns the RolloutAnalysis.
func (e *env) waitStatus(t *testing.T, name, what string, done func(*analysisv1alpha1.RolloutAnalysisStatus) bool) *analysisv1alpha1.RolloutAnalysis {
	t.Helper()
	ra := &analysisv1alpha1.RolloutAnalysis{}
	managertest.Eventually(t, itTimeout, what, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, ra); err != nil {
			return false, err
		}
		s := &ra.Status
		return done(s), fmt.Errorf("status: rev %s attempt %d runs %+v %q conditions %+v", s.CanaryRevision, s.Attempt, s.Runs, s.Message, s.Conditions)
	})
	return ra
}

// waitMessage waits for the status message.
func (e *env) waitMessage(t *testing.T, name, msg string) *analysisv1alpha1.RolloutAnalysis {
	t.Helper()
	return e.waitStatus(t, name, "message "+msg, func(s *analysisv1alpha1.RolloutAnalysisStatus) bool { return s.Message == msg })
}

// cond is a condition's "<status> <reason>".
func cond(ra *analysisv1alpha1.RolloutAnalysis, typ string) string {
	c := meta.FindStatusCondition(ra.Status.Conditions, typ)
	if c == nil {
		return "missing"
	}
	if c.ObservedGeneration != ra.Generation {
		return "stale"
	}
	return string(c.Status) + " " + c.Reason
}

// waitEvent waits for an event of reason on the RolloutAnalysis checkout and returns the notes of that reason.
func (e *env) waitEvent(t *testing.T, reason string) []string {
	t.Helper()
	var notes []string
	managertest.Eventually(t, itTimeout, "event "+reason, func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := e.c.List(ctx, list, client.InNamespace(e.ns)); err != nil {
			return false, err
		}
		notes = nil
		var seen []string
		for _, ev := range list.Items {
			if ev.Regarding.Kind == "RolloutAnalysis" && ev.Regarding.Name == "checkout" {
				seen = append(seen, ev.Reason)
				if ev.Reason == reason {
					notes = append(notes, ev.Note)
				}
			}
		}
		return len(notes) > 0, fmt.Errorf("events %v", seen)
	})
	return notes
}
