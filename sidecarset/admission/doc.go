// Package admission holds the SidecarSet rules of upstream OpenKruise's apps.kruise.io/v1alpha1 webhooks:
// the defaults its mutating webhook applies (and the hash annotations it then computes) and the checks its
// validating webhook makes, each error naming its field. It is pure: what the checks need from the cluster
// (the other SidecarSets, namespace labels, the patchPodMetadata whitelist) is gathered by the module's
// webhook handlers and passed in as a Cluster.
package admission
