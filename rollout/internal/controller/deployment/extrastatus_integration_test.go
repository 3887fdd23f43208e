package deployment

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
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
