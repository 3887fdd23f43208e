// Package plan decides what a PodUnavailableBudget does, values in and values out: which of its pods count as
// available, how many must stay so (desiredAvailable from maxUnavailable or minAvailable over the total
// replicas), which recorded disruptions still hold and when the next one expires, the status that reports it
// all, and whether a pod's update, deletion or eviction is exempt from the budget, admitted (and how the status
// records it) or refused. It reads no client and no clock; the controller and the admission guard gather its
// inputs and write its results.
package plan
