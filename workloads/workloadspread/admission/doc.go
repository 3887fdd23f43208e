// Package admission holds the WorkloadSpread rules of the validating webhook, each error naming its field and
// its rule: a supported target that no other WorkloadSpread of the namespace claims, uniquely named subsets
// with a readable maxReplicas, a valid required node selector term, tolerations and a patch that is a JSON
// object, and a known schedule strategy. It is pure: the module's handler decodes the request, lists the
// namespace's WorkloadSpreads and calls in here.
package admission
