package deployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// A reconcile that read the Deployment while a release held it writes its extra status only if the release
// still holds it: a Deployment released meanwhile never gets the annotation back.
func TestExtraStatusOnlyUnderTheRelease(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	c := managertest.DirectClient(t, clusterConfig, managertest.Scheme(t, clientgoscheme.AddToScheme))
	ns := newNamespace(t, c, "extra-status-guard")
	status := rolloutsv1beta1.DeploymentExtraStatus{UpdatedReadyReplicas: 3, ExpectedUpdatedReplicas: 5}
	for name, held := range map[string]bool{"held": true, "released": false} {
		d := demoDeployment(ns, name, 1)
		if held {
			d.Annotations = map[string]string{rolloutsv1beta1.BatchReleaseControlAnnotation: `{"name":"r"}`}
		}
		if err := c.Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		read := d.DeepCopy() // what a reconcile read while the release held it
		read.Annotations = map[string]string{rolloutsv1beta1.BatchReleaseControlAnnotation: `{"name":"r"}`}
		r := &Reconciler{Deps: reconcilerdeps.Deps{Client: c, Clock: clock.RealClock{}}}
		r.extraWritten.Mark(read.UID, time.Now().Add(-time.Hour)) // its turn in the progress budget has come
		if _, err := r.patchExtraStatus(t.Context(), read, status); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := &appsv1.Deployment{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(d), got); err != nil {
			t.Fatal(err)
		}
		if _, written := got.Annotations[rolloutsv1beta1.DeploymentExtraStatusAnnotation]; written != held {
			t.Errorf("%s: extra status written %v, want %v (annotations %v)", name, written, held, got.Annotations)
		}
	}
}

// The release writes the first extra status when it takes a Deployment over: more ready pods right after
// wait for an interval from there, while fewer ready pods are written at once.
func TestExtraStatusProgressWaitsFromTheTakeOver(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	c := managertest.DirectClient(t, clusterConfig, managertest.Scheme(t, clientgoscheme.AddToScheme))
	d := demoDeployment(newNamespace(t, c, "extra-status-turn"), "web", 1)
	d.Annotations = map[string]string{rolloutsv1beta1.BatchReleaseControlAnnotation: `{"name":"r"}`,
		rolloutsv1beta1.DeploymentExtraStatusAnnotation: `{"updatedReadyReplicas":2,"expectedUpdatedReplicas":5}`}
	if err := c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	fake := clocktesting.NewFakeClock(time.Now())
	r := &Reconciler{Deps: reconcilerdeps.Deps{Client: c, Clock: fake}}
	write := func(ready int32) (time.Duration, string) {
		t.Helper()
		wait, err := r.patchExtraStatus(t.Context(), d, rolloutsv1beta1.DeploymentExtraStatus{UpdatedReadyReplicas: ready, ExpectedUpdatedReplicas: 5})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		return wait, d.Annotations[rolloutsv1beta1.DeploymentExtraStatusAnnotation]
	}
	if wait, got := write(3); wait != 5*time.Second || got != `{"updatedReadyReplicas":2,"expectedUpdatedReplicas":5}` {
		t.Errorf("more ready at first sight: waits %v, annotation %s; want 5s and the take-over's", wait, got)
	}
	fake.Step(5 * time.Second)
	if wait, got := write(3); wait != 0 || got != `{"updatedReadyReplicas":3,"expectedUpdatedReplicas":5}` {
		t.Errorf("more ready an interval later: waits %v, annotation %s; want it written", wait, got)
	}
	if wait, got := write(1); wait != 0 || got != `{"updatedReadyReplicas":1,"expectedUpdatedReplicas":5}` {
		t.Errorf("fewer ready at once: waits %v, annotation %s; want it written", wait, got)
	}
}
