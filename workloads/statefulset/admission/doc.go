// Package admission holds the Advanced StatefulSet admission rules of upstream OpenKruise's apps.kruise.io
// webhooks: the defaults the mutating webhook applies and the checks the validating webhook makes, for the
// v1beta1 shape (v1alpha1 objects are read as v1beta1, see FromV1alpha1). It is pure: the handlers in the
// module's webhooks.go decode the requests, look up storage classes and call in here.
//
// The defaults are upstream's exactly: the defaulted pod template is hashed into the ControllerRevision
// names, so a default upstream does not apply (or one it applies and Flotilla does not) would change the
// revision of every set migrated from upstream, or from an apps/v1 StatefulSet, and make all its pods look
// outdated.
package admission
