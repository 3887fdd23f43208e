// Package v1alpha1 holds the analysis.flotilla.dev/v1alpha1 API types: metric analysis for releases, a Flotilla
// addition that upstream Kruise Rollouts lacks. Its kinds live in their own group so that the rollouts.kruise.io
// wire format stays upstream's.
// +kubebuilder:object:generate=true
// +groupName=analysis.flotilla.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: "analysis.flotilla.dev", Version: "v1alpha1"}

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
