// Package promoted declares the apps.kruise.io/v1beta1 kinds that upstream 1.9 promoted from v1alpha1, over
// their v1alpha1 types, so that what the versions share cannot drift apart. BroadcastJob, ImagePullJob and
// ImageListPullJob were promoted unchanged, and AdvancedCronJob gained what Flotilla's v1alpha1 already has:
// each is its v1alpha1 spec and status under v1beta1's printer columns, and the API server serves them from the
// stored v1alpha1 objects without a conversion webhook (the CRDs' conversion is None: only apiVersion differs). SidecarSet changed in two fields, so it converts through
// the manager's webhook (sidecarset_conversion.go). v1alpha1 stays the stored version: upstream 1.8, its
// kubectl-kruise and the manager read it. (The package cannot be v1beta1 itself: v1alpha1 imports v1beta1.)
// +kubebuilder:object:generate=true
// +groupName=apps.kruise.io
// +versionName=v1beta1
package promoted

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of the kinds of this package.
var GroupVersion = schema.GroupVersion{Group: "apps.kruise.io", Version: "v1beta1"}

// AddToScheme adds the kinds that convert through the manager's webhook: the converter needs them known.
func AddToScheme(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &SidecarSet{}, &SidecarSetList{})
	return nil
}
