// Package plan is the pure part of the WorkloadSpread module: which subset a new pod joins and what the pod
// gets from it (Choose, Admit, Inject), what a deletion gives back (Release), the status the controller
// derives from the target's pods (Status) and the deletion costs that make scale-down empty the right subsets
// first (DeletionCosts). Values in, values out: no client, no clock.
package plan
