package reconcileutil

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// DaemonSetRevisions passes the creations and updates (a rollback renumbers an old revision) of the
// ControllerRevisions a native DaemonSet controls. A native DaemonSet's update revision is its newest
// ControllerRevision, which kube-controller-manager writes after the template change and which a watch may
// deliver after the DaemonSet's own events: whatever reads that revision must wake on it too.
var DaemonSetRevisions = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return DaemonSetOfRevision(e.Object) != "" },
	UpdateFunc:  func(e event.UpdateEvent) bool { return DaemonSetOfRevision(e.ObjectNew) != "" },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// DaemonSetOfRevision names the native DaemonSet that controls a ControllerRevision, or "".
func DaemonSetOfRevision(revision client.Object) string {
	owner := metav1.GetControllerOfNoCopy(revision)
	if owner == nil || owner.Kind != "DaemonSet" || owner.APIVersion != appsv1.SchemeGroupVersion.String() {
		return ""
	}
	return owner.Name
}
