// Package plan is the pure planning of the CloneSet controller: from a CloneSet and its pods at an instant
// it decides which pods to delete, which to create (and of which revision), which to update, and the status
// to report. No client, no clock: the controller gathers, calls, and applies once.
package plan
