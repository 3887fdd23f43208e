// Package plan decides, without side effects, what an EphemeralJob's reconcile does: which of the selected
// pods are its targets, what state each target's ephemeral containers are in, into which pods the
// containers go next, and the job's status. The controller gathers, calls it and applies.
package plan
