package controllerref

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func TestOf(t *testing.T) {
	cloneSet := schema.GroupKind{Group: "apps.kruise.io", Kind: "CloneSet"}
	ref := func(apiVersion, kind string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "web", UID: "u1", Controller: ptr.To(controller)}
	}
	tests := []struct {
		name string
		refs []metav1.OwnerReference
		want bool
	}{
		{name: "no owner"},
		{name: "the kind's controller", refs: []metav1.OwnerReference{ref("apps.kruise.io/v1alpha1", "CloneSet", true)}, want: true},
		{name: "another served version of the kind", refs: []metav1.OwnerReference{ref("apps.kruise.io/v1beta1", "CloneSet", true)}, want: true},
		{name: "an owner that is not the controller", refs: []metav1.OwnerReference{ref("apps.kruise.io/v1alpha1", "CloneSet", false)}},
		{name: "same kind in another group", refs: []metav1.OwnerReference{ref("apps/v1", "CloneSet", true)}},
		{name: "another kind of the group", refs: []metav1.OwnerReference{ref("apps.kruise.io/v1alpha1", "BroadcastJob", true)}},
		{name: "an unparsable apiVersion", refs: []metav1.OwnerReference{ref("apps.kruise.io/v1/x", "CloneSet", true)}},
		{name: "the controller among other owners", want: true, refs: []metav1.OwnerReference{
			ref("v1", "ConfigMap", false), ref("apps.kruise.io/v1alpha1", "CloneSet", true)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tt.refs}}
			got := Of(pod, cloneSet)
			if (got != nil) != tt.want {
				t.Fatalf("Of = %v, want a reference: %v", got, tt.want)
			}
			if got != nil && (got.Name != "web" || got.UID != "u1") {
				t.Fatalf("Of = %+v, want the CloneSet web/u1", got)
			}
		})
	}
}
