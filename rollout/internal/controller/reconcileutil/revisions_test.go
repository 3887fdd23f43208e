package reconcileutil

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Only a native DaemonSet's own ControllerRevisions wake the readers of its update revision.
func TestDaemonSetOfRevision(t *testing.T) {
	owned := func(apiVersion, kind string, controller bool) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "r", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: apiVersion, Kind: kind, Name: "agent", UID: "u", Controller: ptr.To(controller)}}}}
	}
	for name, tc := range map[string]struct {
		revision *appsv1.ControllerRevision
		want     string
	}{
		"native DaemonSet":   {owned("apps/v1", "DaemonSet", true), "agent"},
		"Advanced DaemonSet": {owned("apps.kruise.io/v1alpha1", "DaemonSet", true), ""},
		"StatefulSet":        {owned("apps/v1", "StatefulSet", true), ""},
		"not the controller": {owned("apps/v1", "DaemonSet", false), ""},
		"no owner":           {&appsv1.ControllerRevision{}, ""},
	} {
		if got := DaemonSetOfRevision(tc.revision); got != tc.want {
			t.Errorf("%s: DaemonSetOfRevision = %q, want %q", name, got, tc.want)
		}
		passes := DaemonSetRevisions.Create(event.CreateEvent{Object: tc.revision})
		if passes != (tc.want != "") {
			t.Errorf("%s: creation passes = %v", name, passes)
		}
		if DaemonSetRevisions.Update(event.UpdateEvent{ObjectOld: tc.revision, ObjectNew: tc.revision}) != passes {
			t.Errorf("%s: update passes unlike creation", name)
		}
		if DaemonSetRevisions.Delete(event.DeleteEvent{Object: tc.revision}) {
			t.Errorf("%s: deletion passes", name)
		}
	}
}
