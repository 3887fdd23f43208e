// Package v1alpha1 holds the rollouts.kruise.io/v1alpha1 API types, wire-compatible with Kruise Rollouts.
// Rollout and BatchRelease are served here and converted to and from the v1beta1 hub; TrafficRouting and
// RolloutHistory exist only in this version.
// +kubebuilder:object:generate=true
// +groupName=rollouts.kruise.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: "rollouts.kruise.io", Version: "v1alpha1"}

// SchemeGroupVersion is an alias of GroupVersion for generated-client conventions.
var SchemeGroupVersion = GroupVersion

var (
	// SchemeBuilder registers this package's types; each kind's file appends itself in its init.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds every type of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	knownTypes []runtime.Object
)

// register is called from each kind's file so that the list of kinds stays next to the kinds.
func register(objs ...runtime.Object) { knownTypes = append(knownTypes, objs...) }

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

// Resource returns a GroupResource of this group for a resource name.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}
