package controller

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/broadcastjob/admission"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// TestMain runs one control plane for the package: the scheduler binds the jobs' pods by their node affinity,
// kwok runs them (and completes them, test/cluster/stages/pod-complete.yaml).
func TestMain(m *testing.M) {
	opts := cluster.Options{
		ControllerManager: true,
		Controllers:       []string{"garbage-collector-controller", "serviceaccount-controller"},
		Scheduler:         true,
		Nodes:             1,
	}
	os.Exit(managertest.Main(m, opts, &clusterConfig))
}

// startController creates a namespace and runs the BroadcastJob controller on it, on a fake clock that starts
// now, until the test ends; it returns a direct client for the test's own reads and writes, the namespace and
// the clock. Each test's controller sees only its namespace's objects (and every node).
func startController(t *testing.T) (client.Client, string, *clocktesting.FakeClock) {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
	c := managertest.DirectClient(t, clusterConfig, scheme)
	ns := managertest.Namespace(t, c, "bcj")
	clock := clocktesting.NewFakeClock(time.Now())
	r := &Reconciler{Deps: reconcilerdeps.Deps{Clock: clock}}
	managertest.Start(t, clusterConfig, scheme, r.SetupWithManager,
		func(o *ctrl.Options) { o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}} })
	return c, ns, clock
}

// poolTaint is the taint of the tests' node pools (managertest.NodePool), which newJob tolerates: it keeps
// the other tests' jobs, and the cluster's own node's workloads, off a test's nodes.
const poolTaint = "flotilla.dev/broadcastjob-test"

// runFor is the annotation that keeps a job's pod running that long before kwok completes it.
const runFor = "pod-complete.stage.kwok.x-k8s.io/delay"

// newJob is a BroadcastJob on the nodes of pool whose pods run for runTime, defaulted as the webhook leaves it.
func newJob(ns, pool, runTime string, mutate ...func(*kruiseappsv1alpha1.BroadcastJob)) *kruiseappsv1alpha1.BroadcastJob {
	job := &kruiseappsv1alpha1.BroadcastJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bcj"},
		Spec: kruiseappsv1alpha1.BroadcastJobSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "counter"}, Annotations: map[string]string{runFor: runTime}},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					Containers:                    []corev1.Container{{Name: "counter", Image: "busybox:latest"}},
					NodeSelector:                  map[string]string{"pool": pool},
					Tolerations:                   []corev1.Toleration{{Key: poolTaint, Operator: corev1.TolerationOpExists}},
					TerminationGracePeriodSeconds: ptrInt64(0),
				},
			},
		},
	}
	for _, m := range mutate {
		m(job)
	}
	admission.Default(job, nil)
	return job
}

func ptrInt64(v int64) *int64 { return &v }

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	managertest.Create(t, c, obj)
}

// eventually polls cond until it holds; what names the state in the failure.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	managertest.Eventually(t, itTimeout, what, cond)
}

// waitJob waits until the job's status satisfies done and returns the job.
func waitJob(t *testing.T, c client.Client, job *kruiseappsv1alpha1.BroadcastJob, what string,
	done func(kruiseappsv1alpha1.BroadcastJobStatus) bool) *kruiseappsv1alpha1.BroadcastJob {
	t.Helper()
	got := &kruiseappsv1alpha1.BroadcastJob{}
	eventually(t, what, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(job), got); err != nil {
			return false, err
		}
		s := got.Status
		return done(s), fmt.Errorf("phase %q desired %d active %d succeeded %d failed %d conditions %v",
			s.Phase, s.Desired, s.Active, s.Succeeded, s.Failed, s.Conditions)
	})
	return got
}

// poke changes an annotation of the job: a reconcile follows, which reads the fake clock anew. A job already
// gone needs none.
func poke(t *testing.T, c client.Client, job *kruiseappsv1alpha1.BroadcastJob) {
	t.Helper()
	eventually(t, "job annotated", func(ctx context.Context) (bool, error) {
		got := &kruiseappsv1alpha1.BroadcastJob{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(job), got); err != nil {
			return apierrors.IsNotFound(err), err
		}
		if got.Annotations == nil {
			got.Annotations = map[string]string{}
		}
		got.Annotations["poke"] = fmt.Sprint(time.Now().UnixNano())
		err := c.Update(ctx, got)
		return err == nil, err
	})
}

// jobPods are the job's pods, by name.
func jobPods(ctx context.Context, c client.Client, job *kruiseappsv1alpha1.BroadcastJob) (map[string]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(job.Namespace), client.MatchingLabels{"app": "counter"}); err != nil {
		return nil, err
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		out[p.Name] = p
	}
	return out, nil
}

// eventNotes are the notes of the job's events with reason, sorted.
func eventNotes(ctx context.Context, c client.Client, job *kruiseappsv1alpha1.BroadcastJob, reason string) ([]string, error) {
	list := &eventsv1.EventList{}
	if err := c.List(ctx, list, client.InNamespace(job.Namespace)); err != nil {
		return nil, err
	}
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Name == job.Name && e.Regarding.Kind == "BroadcastJob" && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	sort.Strings(notes)
	return notes, nil
}

// condition is the job's condition of type t, if any.
// endedAs tells whether the status has condition t; t "" asks for a job not ended, with no condition.
func endedAs(s kruiseappsv1alpha1.BroadcastJobStatus, t kruiseappsv1alpha1.JobConditionType) bool {
	if t == "" {
		return len(s.Conditions) == 0
	}
	return condition(s, t) != nil
}

func condition(s kruiseappsv1alpha1.BroadcastJobStatus, t kruiseappsv1alpha1.JobConditionType) *kruiseappsv1alpha1.JobCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}
