// Package admission holds the ResourceDistribution rules of upstream OpenKruise's apps.kruise.io/v1alpha1
// validating webhook, each error naming its field: a Secret or ConfigMap as the resource, under a name and
// kind that never change, and well-formed targets. It is pure: the module's webhook handler decodes the
// requests and calls in here.
package admission
