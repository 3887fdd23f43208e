// Package admission holds the Advanced DaemonSet rules of upstream OpenKruise's apps.kruise.io/v1alpha1
// webhooks: the defaults its mutating webhook applies and the checks its validating webhook makes, each
// error naming its field. It is pure: the module's webhook handlers decode the requests and call in here.
//
// Upstream defaults the strategy only, never the pod template: the template is hashed into the revision
// names, and a default added to it would make every pod of a DaemonSet migrated from upstream look outdated.
package admission
