// Package sameshape declares the apps.kruise.io/v1beta1 versions whose objects have exactly the shape of their
// v1alpha1 version (upstream 1.9 promoted them unchanged). Each kind here is its v1alpha1 spec and status
// under its own version's printer columns, so the two schemas cannot drift apart, and the API server serves
// both from the stored v1alpha1 objects without a conversion webhook (the CRD's conversion is None: only
// apiVersion differs). Nothing in the manager reads these types; they exist for the CRDs.
// +groupName=apps.kruise.io
// +versionName=v1beta1
package sameshape
