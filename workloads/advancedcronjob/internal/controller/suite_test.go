package controller

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob/admission"
	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob/internal/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// TestMain runs one control plane for the package: kube's Job controller runs the Jobs (kwok completes their
// pods) and its garbage collector removes what deleted children leave. No BroadcastJob or ImageListPullJob
// controller runs: the tests write their status themselves.
func TestMain(m *testing.M) {
	opts := cluster.Options{
		ControllerManager: true,
		Controllers:       []string{"job-controller", "garbage-collector-controller", "serviceaccount-controller"},
		Scheduler:         true,
		Nodes:             1,
	}
	os.Exit(managertest.Main(m, opts, &clusterConfig))
}

// env is one test's namespace, its controller and the controller's clock, which the test steps instead of
// waiting for the schedule.
type env struct {
	t     *testing.T
	c     client.Client
	ns    string
	clock *clocktesting.FakeClock
	pokes atomic.Int32
}

// start creates a namespace and runs the controller on it, in UTC, on a fake clock at the real time.
func start(t *testing.T) *env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
	e := &env{t: t, c: managertest.DirectClient(t, clusterConfig, scheme), clock: clocktesting.NewFakeClock(time.Now())}
	e.ns = managertest.Namespace(t, e.c, "acj")
	r := &Reconciler{Deps: reconcilerdeps.Deps{Clock: e.clock}, Local: time.UTC}
	managertest.Start(t, clusterConfig, scheme, r.SetupWithManager,
		func(o *ctrl.Options) { o.Cache.DefaultNamespaces = map[string]cache.Config{e.ns: {}} })
	return e
}

func (e *env) create(obj client.Object) {
	e.t.Helper()
	if err := e.c.Create(e.t.Context(), obj); err != nil {
		e.t.Fatal(err)
	}
}

// podTemplate's pods run to completion on kwok after delay.
func podTemplate(delay string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"pod-complete.stage.kwok.x-k8s.io/delay": delay}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "counter", Image: "busybox:latest"}}},
	}
}

// newAdvancedCronJob creates an AdvancedCronJob defaulted as the webhook leaves it (a BroadcastJob template
// unless mutate sets a job template) and returns it as stored.
func (e *env) newAdvancedCronJob(schedule string, mutate ...func(*kruiseappsv1alpha1.AdvancedCronJob)) *kruiseappsv1alpha1.AdvancedCronJob {
	e.t.Helper()
	acj := &kruiseappsv1alpha1.AdvancedCronJob{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "acj"},
		Spec: kruiseappsv1alpha1.AdvancedCronJobSpec{Schedule: schedule}}
	acj.Spec.Template.BroadcastJobTemplate = &kruiseappsv1alpha1.BroadcastJobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "report"}, Annotations: map[string]string{"team": "ops"}},
		Spec:       kruiseappsv1alpha1.BroadcastJobSpec{Template: podTemplate("0s")},
	}
	for _, m := range mutate {
		m(acj)
	}
	admission.Default(acj, nil)
	if errs := admission.Validate(acj, nil, admission.Options{}); len(errs) > 0 {
		e.t.Fatal(errs.ToAggregate())
	}
	e.create(acj)
	return acj
}

func withJobTemplate(acj *kruiseappsv1alpha1.AdvancedCronJob) {
	acj.Spec.Template.BroadcastJobTemplate = nil
	acj.Spec.Template.JobTemplate = &batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "report"}, Annotations: map[string]string{"team": "ops"}},
		Spec:       batchv1.JobSpec{Template: podTemplate("0s")},
	}
}

// withImageListTemplate gives the AdvancedCronJob an ImageListPullJob template in place of its BroadcastJob's.
func withImageListTemplate(acj *kruiseappsv1alpha1.AdvancedCronJob) {
	acj.Spec.Template.BroadcastJobTemplate = nil
	spec := kruiseappsv1alpha1.ImageListPullJobSpec{Images: []string{"nginx:1.25", "redis:7.0"}}
	spec.Parallelism, spec.CompletionPolicy.Type = ptr.To(intstr.FromInt32(5)), kruiseappsv1alpha1.Always
	spec.PodSelector = &kruiseappsv1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	acj.Spec.Template.ImageListPullJobTemplate = &kruiseappsv1alpha1.ImageListPullJobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "prefetch"}, Annotations: map[string]string{"team": "ops"}},
		Spec:       spec,
	}
}

// nextMinute is the first minute boundary after t.
func nextMinute(t time.Time) time.Time { return t.Truncate(time.Minute).Add(time.Minute) }

// advance sets the controller's clock and has it look at the AdvancedCronJob again (as its requeue would
// once the real time came).
func (e *env) advance(acj *kruiseappsv1alpha1.AdvancedCronJob, to time.Time) {
	e.t.Helper()
	e.clock.SetTime(to)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.flotilla.dev/poke":"%d"}}}`, e.pokes.Add(1))
	if err := e.c.Patch(e.t.Context(), acj.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		e.t.Fatal(err)
	}
}

// eventually polls cond until it holds; what names the state in the failure.
func (e *env) eventually(what string, cond func(ctx context.Context) (bool, error)) {
	e.t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(e.t.Context(), 200*time.Millisecond, itTimeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

// state is the AdvancedCronJob's status and the names of its children of the template's kind, sorted.
func (e *env) state(ctx context.Context, acj *kruiseappsv1alpha1.AdvancedCronJob) (kruiseappsv1alpha1.AdvancedCronJobStatus, []string, error) {
	got := &kruiseappsv1alpha1.AdvancedCronJob{}
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(acj), got); err != nil {
		return got.Status, nil, err
	}
	list := newList(plan.TemplateKind(&acj.Spec))
	if err := e.c.List(ctx, list, client.InNamespace(e.ns)); err != nil {
		return got.Status, nil, err
	}
	var names []string
	err := apimeta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok && obj.GetDeletionTimestamp() == nil {
			names = append(names, obj.GetName())
		}
		return nil
	})
	if err != nil {
		return got.Status, nil, err
	}
	sort.Strings(names)
	return got.Status, names, nil
}

// waitFor waits until the AdvancedCronJob has exactly the children named, the active ones among them, and
// lastScheduleTime last (nil: any).
func (e *env) waitFor(acj *kruiseappsv1alpha1.AdvancedCronJob, children, active []string, last *time.Time) kruiseappsv1alpha1.AdvancedCronJobStatus {
	e.t.Helper()
	var status kruiseappsv1alpha1.AdvancedCronJobStatus
	e.eventually(fmt.Sprintf("children %v, active %v, last %v", children, active, last), func(ctx context.Context) (bool, error) {
		s, names, err := e.state(ctx, acj)
		status = s
		if err != nil {
			return false, err
		}
		var act []string
		for _, ref := range s.Active {
			act = append(act, ref.Name)
		}
		sort.Strings(act)
		ok := fmt.Sprint(names) == fmt.Sprint(children) && fmt.Sprint(act) == fmt.Sprint(active) &&
			(last == nil || (s.LastScheduleTime != nil && s.LastScheduleTime.Time.Equal(*last)))
		return ok, fmt.Errorf("children %v, status %+v", names, s)
	})
	return status
}

// events are the notes of the AdvancedCronJob's events with reason.
func (e *env) events(ctx context.Context, acj *kruiseappsv1alpha1.AdvancedCronJob, reason string) ([]string, error) {
	list := &eventsv1.EventList{}
	if err := e.c.List(ctx, list, client.InNamespace(e.ns)); err != nil {
		return nil, err
	}
	var notes []string
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "AdvancedCronJob" && ev.Regarding.Name == acj.Name && ev.Reason == reason {
			notes = append(notes, ev.Note)
		}
	}
	sort.Strings(notes)
	return notes, nil
}

// waitEvent waits for an event of reason whose note contains part.
func (e *env) waitEvent(acj *kruiseappsv1alpha1.AdvancedCronJob, reason, note string) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("a %s event %q", reason, note), func(ctx context.Context) (bool, error) {
		notes, err := e.events(ctx, acj, reason)
		for _, n := range notes {
			if n == note {
				return true, nil
			}
		}
		return false, fmt.Errorf("%s events %q: %w", reason, notes, err)
	})
}

// finish writes a BroadcastJob's status as its controller would once it finished.
func (e *env) finish(name string, state kruiseappsv1alpha1.JobConditionType, started time.Time) {
	e.t.Helper()
	bcj := &kruiseappsv1alpha1.BroadcastJob{}
	if err := e.c.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, bcj); err != nil {
		e.t.Fatal(err)
	}
	phase := kruiseappsv1alpha1.PhaseCompleted
	if state == kruiseappsv1alpha1.JobFailed {
		phase = kruiseappsv1alpha1.PhaseFailed
	}
	bcj.Status.Phase, bcj.Status.StartTime = phase, &metav1.Time{Time: started}
	bcj.Status.Conditions = []kruiseappsv1alpha1.JobCondition{{Type: state, Status: corev1.ConditionTrue, LastProbeTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := e.c.Status().Update(e.t.Context(), bcj); err != nil {
		e.t.Fatal(err)
	}
}

// finishImageList writes an ImageListPullJob's status as its controller does once every image's ImagePullJob
// finished: every image pulled on every node, or the last one failed on a node.
func (e *env) finishImageList(name string, succeeded bool, started time.Time) {
	e.t.Helper()
	job := &kruiseappsv1alpha1.ImageListPullJob{}
	if err := e.c.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, job); err != nil {
		e.t.Fatal(err)
	}
	images := int32(len(job.Spec.Images))
	job.Status = kruiseappsv1alpha1.ImageListPullJobStatus{StartTime: &metav1.Time{Time: started}, CompletionTime: ptr.To(metav1.Now()),
		Desired: images, Completed: images, Succeeded: images}
	if !succeeded {
		job.Status.Succeeded--
		job.Status.FailedImageStatuses = []*kruiseappsv1alpha1.FailedImageStatus{{ImagePullJob: name + "-redis", Name: job.Spec.Images[images-1],
			Message: "job has completed; 1 failed (node-1: 401 Unauthorized)"}}
	}
	if err := e.c.Status().Update(e.t.Context(), job); err != nil {
		e.t.Fatal(err)
	}
}

func childAt(t time.Time) string { return fmt.Sprintf("acj-%d", t.Unix()) }
