package imagejob_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/admission"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/nodeimagemanager"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// cfg is nil when the tests run with -short: no control plane, pure tests only.
var cfg *rest.Config

const itTimeout = 60 * time.Second

// TestMain runs one control plane for the package; the garbage collector deletes an ImageListPullJob's
// ImagePullJobs with it. No node agent runs: the tests write the NodeImages' status as the agent would.
func TestMain(m *testing.M) {
	opts := cluster.Options{ControllerManager: true, Controllers: []string{"garbage-collector-controller"}}
	os.Exit(managertest.Main(m, opts, &cfg))
}

var names atomic.Int32

// env is one test's view: a direct client, a namespace for its jobs, the namespace pull secrets are copied to,
// and a label its NodeImages carry.
type env struct {
	t         *testing.T
	c         client.Client
	ns, cfgNS string
	label     map[string]string
}

// start runs the NodeImage, ImagePullJob and ImageListPullJob controllers until the test ends.
func start(t *testing.T) *env {
	t.Helper()
	return startWith(t, startOptions{})
}

// startWithClock is start with the ImagePullJob controller reading clk.
func startWithClock(t *testing.T, clk clock.PassiveClock) *env {
	t.Helper()
	return startWith(t, startOptions{clock: clk})
}

// startOptions change what start runs: the ImagePullJob controller's clock (nil: the real one), more
// controllers on the same manager (setup) and the manager's options (configure).
type startOptions struct {
	clock     clock.PassiveClock
	setup     func(ctrl.Manager) error
	configure []func(*ctrl.Options)
}

func startWith(t *testing.T, o startOptions) *env {
	t.Helper()
	managertest.RequireCluster(t, cfg)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme, kruiseappsv1beta1.AddToScheme)
	c := managertest.DirectClient(t, cfg, scheme)
	e := &env{t: t, c: c, ns: managertest.NamespaceWithServiceAccount(t, c, "ipj"), cfgNS: managertest.Namespace(t, c, "ipj-config"),
		label: map[string]string{"imagejob.flotilla.dev/test": fmt.Sprintf("t%d", names.Add(1))}}
	managertest.Start(t, cfg, scheme, func(mgr ctrl.Manager) error {
		if err := (&nodeimagemanager.Reconciler{}).SetupWithManager(mgr); err != nil {
			return err
		}
		if err := (&imagejob.PullJobReconciler{ConfigNamespace: e.cfgNS, Deps: reconcilerdeps.Deps{Clock: o.clock}}).SetupWithManager(mgr); err != nil {
			return err
		}
		if err := (&imagejob.ListJobReconciler{}).SetupWithManager(mgr); err != nil {
			return err
		}
		if o.setup != nil {
			return o.setup(mgr)
		}
		return nil
	}, o.configure...)
	return e
}

// nodes creates n NodeImages of the test (fake: no Node behind them), named <prefix>-<test>-<i>.
func (e *env) nodes(n int) []string {
	e.t.Helper()
	var out []string
	for i := range n {
		labels := map[string]string{kruiseappsv1alpha1.FakeNodeImageLabelKey: "true"}
		for k, v := range e.label {
			labels[k] = v
		}
		ni := &kruiseappsv1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%s-%d", e.label["imagejob.flotilla.dev/test"], i), Labels: labels}}
		managertest.Create(e.t, e.c, ni)
		e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), ni) })
		out = append(out, ni.Name)
	}
	return out
}

// selector selects the test's NodeImages by label.
func (e *env) selector() *kruiseappsv1alpha1.ImagePullJobNodeSelector {
	return &kruiseappsv1alpha1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: e.label}}
}

// job creates an ImagePullJob of image in the test's namespace, defaulted and validated as the webhooks would.
func (e *env) job(name, image string, change func(*kruiseappsv1alpha1.ImagePullJob)) *kruiseappsv1alpha1.ImagePullJob {
	e.t.Helper()
	j := &kruiseappsv1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: kruiseappsv1alpha1.ImagePullJobSpec{Image: image}}
	if change != nil {
		change(j)
	}
	admission.DefaultImagePullJob(j, nil)
	if errs := admission.ValidateImagePullJob(j, nil); len(errs) > 0 {
		e.t.Fatalf("the webhook would refuse the job: %v", errs)
	}
	managertest.Create(e.t, e.c, j)
	return j
}

func (e *env) get(obj client.Object) error {
	return e.c.Get(e.t.Context(), client.ObjectKeyFromObject(obj), obj)
}

// waitJob waits until the job's status satisfies done and returns the job.
func (e *env) waitJob(j *kruiseappsv1alpha1.ImagePullJob, what string, done func(kruiseappsv1alpha1.ImagePullJobStatus) bool) *kruiseappsv1alpha1.ImagePullJob {
	e.t.Helper()
	got := &kruiseappsv1alpha1.ImagePullJob{}
	managertest.Eventually(e.t, itTimeout, what, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(j), got); err != nil {
			return false, err
		}
		s := got.Status
		return done(s), fmt.Errorf("desired %d active %d succeeded %d failed %d failedNodes %v completed %v message %q",
			s.Desired, s.Active, s.Succeeded, s.Failed, s.FailedNodes, s.CompletionTime != nil, s.Message)
	})
	return got
}

func (e *env) nodeImage(name string) *kruiseappsv1alpha1.NodeImage {
	e.t.Helper()
	ni := &kruiseappsv1alpha1.NodeImage{}
	if err := e.c.Get(e.t.Context(), client.ObjectKey{Name: name}, ni); err != nil {
		e.t.Fatal(err)
	}
	return ni
}

// tag is the NodeImage's spec of image:tag; ok is false without one.
func (e *env) tag(node, image, tag string) (kruiseappsv1alpha1.ImageTagSpec, bool) {
	return e.tagOf(e.nodeImage(node), image, tag)
}

// ownedBy are the nodes among nodes whose image:tag names job.
func (e *env) ownedBy(j *kruiseappsv1alpha1.ImagePullJob, image, tag string, nodes []string) []string {
	e.t.Helper()
	var out []string
	for _, n := range nodes {
		t, ok := e.tag(n, image, tag)
		if ok && slices.ContainsFunc(t.OwnerReferences, func(r corev1.ObjectReference) bool { return r.UID == j.UID }) {
			out = append(out, n)
		}
	}
	return out
}

// report plays the node agent: the status of image:tag on node, for the spec's current version, is phase.
func (e *env) report(node, image, tag string, phase kruiseappsv1alpha1.ImagePullPhase, message string) {
	e.t.Helper()
	managertest.Eventually(e.t, itTimeout, "status reported on "+node, func(ctx context.Context) (bool, error) {
		ni := &kruiseappsv1alpha1.NodeImage{}
		if err := e.c.Get(ctx, client.ObjectKey{Name: node}, ni); err != nil {
			return false, err
		}
		spec, ok := e.tagOf(ni, image, tag)
		if !ok {
			return false, fmt.Errorf("no tag %s:%s on %s", image, tag, node)
		}
		now := metav1.Now()
		st := kruiseappsv1alpha1.ImageTagStatus{Tag: tag, Version: spec.Version, Phase: phase, Message: message, StartTime: &now}
		if phase == kruiseappsv1alpha1.ImagePhaseSucceeded || phase == kruiseappsv1alpha1.ImagePhaseFailed {
			st.CompletionTime = &now
		}
		if ni.Status.ImageStatuses == nil {
			ni.Status.ImageStatuses = map[string]kruiseappsv1alpha1.ImageStatus{}
		}
		tags := slices.DeleteFunc(ni.Status.ImageStatuses[image].Tags, func(s kruiseappsv1alpha1.ImageTagStatus) bool { return s.Tag == tag })
		ni.Status.ImageStatuses[image] = kruiseappsv1alpha1.ImageStatus{Tags: append(tags, st)}
		err := e.c.Status().Update(ctx, ni)
		return err == nil, client.IgnoreNotFound(err)
	})
}

func (e *env) tagOf(ni *kruiseappsv1alpha1.NodeImage, image, tag string) (kruiseappsv1alpha1.ImageTagSpec, bool) {
	for _, t := range ni.Spec.Images[image].Tags {
		if t.Tag == tag {
			return t, true
		}
	}
	return kruiseappsv1alpha1.ImageTagSpec{}, false
}

// consistently checks that cond holds long enough for the controllers to have acted.
func (e *env) consistently(what string, cond func() bool) {
	e.t.Helper()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if !cond() {
			e.t.Fatalf("expected %s to hold", what)
		}
	}
}

// reasons are the reasons of the events about the object named name of the test's namespace, in order.
func (e *env) reasons(kind, name string) []string {
	e.t.Helper()
	list := &eventsv1.EventList{}
	if err := e.c.List(e.t.Context(), list, client.InNamespace(e.ns)); err != nil {
		e.t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	var out []string
	for _, ev := range list.Items {
		if ev.Regarding.Kind == kind && ev.Regarding.Name == name {
			out = append(out, ev.Reason)
		}
	}
	return out
}

// waitReasons waits until the events about the object include every reason of want.
func (e *env) waitReasons(kind, name string, want ...string) {
	e.t.Helper()
	managertest.Eventually(e.t, itTimeout, fmt.Sprintf("events %v about %s", want, name), func(context.Context) (bool, error) {
		got := e.reasons(kind, name)
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false, fmt.Errorf("events %v", got)
			}
		}
		return true, nil
	})
}

// gone waits until obj no longer exists.
func (e *env) gone(obj client.Object, what string) {
	e.t.Helper()
	managertest.Eventually(e.t, itTimeout, what, func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
