// Package controllerref reads an object's controller reference by the group and kind it names. Ownership is
// decided by group and kind, never by version: a reference written under another served version of the same
// kind names the same controller.
package controllerref

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Of returns obj's controller reference when it names a controller of kind gk, nil otherwise. It points into
// obj's owner references (not a copy): callers read it and do not keep it past obj.
func Of(obj metav1.Object, gk schema.GroupKind) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != gk.Kind {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != gk.Group {
		return nil
	}
	return ref
}
