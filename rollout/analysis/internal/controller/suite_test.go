package controller

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/rollout/analysis/admission"
	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// TestMain runs one control plane for the package: the API server and etcd (Jobs are owned, not run: the
// tests play the Job controller's part by writing the Jobs' status).
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

// env is one test's cluster view: a direct client and the namespace the test's controller watches.
type env struct {
	c  client.Client
	ns string
}

// start runs the AnalysisRun controller until the test ends, on the runs of a new namespace of its own.
func start(t *testing.T) *env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, analysisv1alpha1.AddToScheme)
	e := &env{c: managertest.DirectClient(t, clusterConfig, scheme)}
	e.ns = managertest.Namespace(t, e.c, "analysis")
	managertest.Start(t, clusterConfig, scheme, (&Reconciler{}).SetupWithManager, func(o *ctrl.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{e.ns: {}}
	})
	return e
}

// create creates obj in the test's namespace (unless it is cluster-scoped), after checking that the webhook
// would accept it.
func (e *env) create(t *testing.T, obj client.Object) {
	t.Helper()
	var errs error
	switch o := obj.(type) {
	case *analysisv1alpha1.AnalysisRun:
		o.Namespace, errs = e.ns, admission.ValidateRun(o, nil).ToAggregate()
	case *analysisv1alpha1.AnalysisTemplate:
		o.Namespace, errs = e.ns, admission.ValidateTemplate(o, nil).ToAggregate()
	case *analysisv1alpha1.ClusterAnalysisTemplate:
		errs = admission.ValidateClusterTemplate(o, nil).ToAggregate()
		t.Cleanup(func() { _ = e.c.Delete(context.Background(), o) })
	default:
		obj.SetNamespace(e.ns)
	}
	if errs != nil {
		t.Fatalf("the webhook would refuse %s: %v", obj.GetName(), errs)
	}
	managertest.Create(t, e.c, obj)
}

// waitRun waits until the run's status satisfies done and returns the run.
func (e *env) waitRun(t *testing.T, name, what string, done func(*analysisv1alpha1.AnalysisRunStatus) bool) *analysisv1alpha1.AnalysisRun {
	t.Helper()
	run := &analysisv1alpha1.AnalysisRun{}
	managertest.Eventually(t, itTimeout, what, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, run); err != nil {
			return false, err
		}
		s := &run.Status
		return done(s), fmt.Errorf("phase %s %q, results %+v", s.Phase, s.Message, s.MetricResults)
	})
	return run
}

// completed waits for the run's final phase.
func (e *env) completed(t *testing.T, name string) *analysisv1alpha1.AnalysisRun {
	t.Helper()
	return e.waitRun(t, name, "the run's final phase", func(s *analysisv1alpha1.AnalysisRunStatus) bool { return s.Phase.Completed() })
}

// eventReasons are the reasons of the run's events, each once.
func (e *env) eventReasons(ctx context.Context, run string) (map[string]string, error) {
	list := &eventsv1.EventList{}
	if err := e.c.List(ctx, list, client.InNamespace(e.ns)); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "AnalysisRun" && ev.Regarding.Name == run {
			out[ev.Reason] = ev.Note
		}
	}
	return out, nil
}

// waitEvent waits for an event of reason on the run and returns its note.
func (e *env) waitEvent(t *testing.T, run, reason string) string {
	t.Helper()
	var note string
	managertest.Eventually(t, itTimeout, "event "+reason, func(ctx context.Context) (bool, error) {
		got, err := e.eventReasons(ctx, run)
		note = got[reason]
		return err == nil && note != "", fmt.Errorf("events %v: %w", got, err)
	})
	return note
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
