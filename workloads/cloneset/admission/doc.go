// Package admission holds the CloneSet admission rules of upstream OpenKruise's apps.kruise.io/v1alpha1
// webhooks: the defaults the mutating webhook applies and the checks the validating webhook makes. It is
// pure: the webhook handlers in package webhooks decode the requests, fetch the pods named in
// spec.scaleStrategy.podsToDelete and call in here.
//
// The defaults are upstream's exactly, no more and no less: the defaulted template is hashed into the
// ControllerRevision names, so a default upstream does not apply (or one it applies and Flotilla does not)
// would change the revision of every CloneSet migrated from upstream and make all its pods look outdated.
package admission
