// Package plan is the Advanced StatefulSet's pure planning: which ordinals the set's pods take, what one
// reconcile creates, deletes and updates (upstream's order and limits), what finishes a pod's in-place update
// or lifecycle move, which owners a pod's claims carry, and the status counters. Values in, values out: no
// client, no clock; the controller reads the world, calls in here and applies the result.
package plan
