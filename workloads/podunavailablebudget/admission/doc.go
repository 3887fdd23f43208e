// Package admission holds the PodUnavailableBudget rules of upstream OpenKruise's policy.kruise.io/v1alpha1
// validating webhook, each error naming its field: exactly one of selector and targetRef, which never change,
// exactly one of maxUnavailable and minAvailable, readable annotations, and no other budget of the namespace
// protecting the same pods. It is pure: the module's webhook handler decodes the requests, lists the other
// budgets and calls in here.
package admission
