// Package admission holds the admission rules of upstream OpenKruise's apps.kruise.io/v1alpha1 webhooks for
// the node agent's kinds. ContainerRecreateRequest (mutating webhook): on create the defaults, the checks of
// the request against its pod and what the request copies from the pod (labels, container contexts,
// preStop, ports); on update the immutable fields. ImagePullJob and ImageListPullJob: the defaults and the
// validation (DefaultImagePullJob, ValidateImagePullJob and their ImageListPullJob forms). PodProbeMarker: the
// validation (ValidatePodProbeMarker). It is pure: the webhook handlers in package nodeagent decode the
// request, read the pod and call in here. Every rejection names its field.
package admission
