// Package admission holds the ContainerRecreateRequest admission rules of upstream OpenKruise's
// apps.kruise.io/v1alpha1 mutating webhook: on create the defaults, the checks of the request against its pod
// and what the request copies from the pod (labels, container contexts, preStop, ports); on update the
// immutable fields. It is pure: the webhook handler in package webhooks decodes the request, reads the pod
// and calls in here. Every rejection names its field.
package admission
