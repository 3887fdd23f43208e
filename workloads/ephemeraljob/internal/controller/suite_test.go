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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podcache"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// TestMain runs one API server for the package. No kubelet runs: the tests write the pods' ephemeral
// container statuses themselves, as a kubelet would, and the controller reads them.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

func testScheme(t *testing.T) *runtime.Scheme {
	return managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
}

// env is one test's namespace, with the controller running on it on a fake clock.
type env struct {
	t     *testing.T
	c     client.Client
	ns    string
	clock *clocktesting.FakeClock
}

// start creates a namespace and runs the controller on it until the test ends, on a fake clock; the
// returned client reads and writes directly.
func start(t *testing.T) *env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := testScheme(t)
	c := managertest.DirectClient(t, clusterConfig, scheme)
	e := &env{t: t, c: c, clock: clocktesting.NewFakeClock(time.Now())}
	e.ns = managertest.NamespaceWithServiceAccount(t, c, "ejob")
	r := &Reconciler{Deps: reconcilerdeps.Deps{Clock: e.clock}}
	managertest.Start(t, clusterConfig, scheme, r.SetupWithManager, func(o *ctrl.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{e.ns: {}}
		// The manager's pod cache: the tests' pods, a ReplicaSet's, are held slim.
		o.Cache.ByObject = map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: podcache.Transform(nil)}}
	})
	return e
}

func (e *env) create(obj client.Object) {
	e.t.Helper()
	if err := e.c.Create(e.t.Context(), obj); err != nil {
		e.t.Fatal(err)
	}
}

// replicaSet is the made-up controller of the tests' pods: a native workload, whose pods the manager caches slim.
var replicaSet = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-uid", Controller: ptr.To(true)}

// pod creates a running pod labelled app=<app>, controlled by replicaSet. The job takes the older pods first, and those of the same
// second by name: tests create their pods in the order of their names.
func (e *env) pod(name, app string) *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{replicaSet}},
		Spec: corev1.PodSpec{NodeName: "n1", AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "app", Image: "example.com/app:v1"}}},
	}
	e.create(p)
	e.setPhase(p, corev1.PodRunning)
	return p
}

// job creates the EphemeralJob diag injecting "debug" into the pods labelled app=web.
func (e *env) job(mutate ...func(*kruiseappsv1alpha1.EphemeralJob)) *kruiseappsv1alpha1.EphemeralJob {
	e.t.Helper()
	j := &kruiseappsv1alpha1.EphemeralJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "diag"},
		Spec: kruiseappsv1alpha1.EphemeralJobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: kruiseappsv1alpha1.EphemeralContainerTemplateSpec{EphemeralContainers: []corev1.EphemeralContainer{{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "example.com/debug:v1",
					Command: []string{"sh", "-c", "echo hello"}, Env: []corev1.EnvVar{{Name: "MODE", Value: "check"}},
					ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile},
			}}},
		},
	}
	for _, m := range mutate {
		m(j)
	}
	e.create(j)
	return j
}

// setPhase writes the pod's phase, as a kubelet would.
func (e *env) setPhase(pod *corev1.Pod, phase corev1.PodPhase) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.c.Get(e.t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status.Phase = phase
		return e.c.Status().Update(e.t.Context(), pod)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// setState writes the pod's status for its ephemeral container "debug", as a kubelet would.
func (e *env) setState(pod *corev1.Pod, state corev1.ContainerState) {
	const name = "debug"
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.c.Get(e.t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		s := corev1.ContainerStatus{Name: name, Image: "example.com/debug:v1", State: state}
		for i := range pod.Status.EphemeralContainerStatuses {
			if pod.Status.EphemeralContainerStatuses[i].Name == name {
				pod.Status.EphemeralContainerStatuses[i] = s
				return e.c.Status().Update(e.t.Context(), pod)
			}
		}
		pod.Status.EphemeralContainerStatuses = append(pod.Status.EphemeralContainerStatuses, s)
		return e.c.Status().Update(e.t.Context(), pod)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func runningState() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
}

func exited(code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}
}

// poke changes an annotation of the job, so that the controller looks at it again after the test moved the
// fake clock.
func (e *env) poke(job *kruiseappsv1alpha1.EphemeralJob) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &kruiseappsv1alpha1.EphemeralJob{}
		if err := e.c.Get(e.t.Context(), client.ObjectKeyFromObject(job), got); err != nil {
			return err
		}
		if got.Annotations == nil {
			got.Annotations = map[string]string{}
		}
		got.Annotations["test/poke"] = e.clock.Now().String()
		return e.c.Update(e.t.Context(), got)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// update re-reads the job and applies change, again after a conflict.
func (e *env) update(job *kruiseappsv1alpha1.EphemeralJob, change func(*kruiseappsv1alpha1.EphemeralJob)) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.c.Get(e.t.Context(), client.ObjectKeyFromObject(job), job); err != nil {
			return err
		}
		change(job)
		return e.c.Update(e.t.Context(), job)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// eventually polls cond until it holds; what names the state in the failure, last says what was seen.
func (e *env) eventually(what string, cond func(ctx context.Context) (bool, string)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.t.Context(), 200*time.Millisecond, itTimeout, true, func(ctx context.Context) (bool, error) {
		ok, seen := cond(ctx)
		last = seen
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}

// status waits until the job's status satisfies want.
func (e *env) status(job *kruiseappsv1alpha1.EphemeralJob, what string, want func(s kruiseappsv1alpha1.EphemeralJobStatus) bool) {
	e.t.Helper()
	e.eventually(what, func(ctx context.Context) (bool, string) {
		got := &kruiseappsv1alpha1.EphemeralJob{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(job), got); err != nil {
			return false, err.Error()
		}
		*job = *got
		return want(got.Status), fmt.Sprintf("%+v", got.Status)
	})
}

// counters is a status's phase and counters in the printer columns' order.
func counters(s kruiseappsv1alpha1.EphemeralJobStatus) string {
	return fmt.Sprintf("%s match=%d succeeded=%d failed=%d running=%d waiting=%d", s.Phase, s.Matches, s.Succeeded, s.Failed, s.Running, s.Waiting)
}

func (e *env) counters(job *kruiseappsv1alpha1.EphemeralJob, want string) {
	e.t.Helper()
	e.status(job, want, func(s kruiseappsv1alpha1.EphemeralJobStatus) bool { return counters(s) == want })
}

// injected are the pods holding the job's "debug" container, by name, sorted.
func (e *env) injected(ctx context.Context, job *kruiseappsv1alpha1.EphemeralJob) ([]string, error) {
	list := &corev1.PodList{}
	if err := e.c.List(ctx, list, client.InNamespace(e.ns)); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range list.Items {
		for _, ec := range p.Spec.EphemeralContainers {
			if ec.Name == "debug" && hasEnv(ec.Env, kruiseappsv1alpha1.EphemeralContainerEnvKey, string(job.UID)) {
				out = append(out, p.Name)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func hasEnv(env []corev1.EnvVar, name, value string) bool {
	for _, e := range env {
		if e.Name == name && e.Value == value {
			return true
		}
	}
	return false
}

// waitInjected waits until exactly the pods want hold the job's container.
func (e *env) waitInjected(job *kruiseappsv1alpha1.EphemeralJob, want ...string) {
	e.t.Helper()
	sort.Strings(want)
	e.eventually(fmt.Sprintf("the containers in %v", want), func(ctx context.Context) (bool, string) {
		got, err := e.injected(ctx, job)
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("%v %v", got, err)
	})
}

// events are the job's events of reason, as "type note", sorted.
func (e *env) events(ctx context.Context, job *kruiseappsv1alpha1.EphemeralJob, reason string) []string {
	list := &eventsv1.EventList{}
	if err := e.c.List(ctx, list, client.InNamespace(e.ns)); err != nil {
		return nil
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Regarding.UID == job.UID && ev.Reason == reason {
			out = append(out, ev.Type+" "+ev.Note)
		}
	}
	sort.Strings(out)
	return out
}

func (e *env) waitEvents(job *kruiseappsv1alpha1.EphemeralJob, reason string, want ...string) {
	e.t.Helper()
	sort.Strings(want)
	e.eventually(reason+" events", func(ctx context.Context) (bool, string) {
		got := e.events(ctx, job, reason)
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
	})
}

// gone waits until the job no longer exists.
func (e *env) gone(job *kruiseappsv1alpha1.EphemeralJob) {
	e.t.Helper()
	e.eventually("the job gone", func(ctx context.Context) (bool, string) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(job), &kruiseappsv1alpha1.EphemeralJob{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
