// Package admission holds the UnitedDeployment rules of upstream OpenKruise's apps.kruise.io/v1alpha1
// webhooks: the defaults its mutating webhook applies and the checks its validating webhook makes, each error
// naming its field and the rule. It is pure: the module's webhook handlers decode the requests and call in
// here.
package admission
