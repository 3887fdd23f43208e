// Package pub holds the apps.kruise.io types and constants that are shared by several kinds and carry no
// kind of their own: pod lifecycle hooks and states, the in-place update state recorded on pods, readiness
// gates, container launch priority, and update priority/scatter strategies. Every value here is part of the
// wire format OpenKruise clients and pods already carry, so names and JSON tags follow upstream exactly.
// +kubebuilder:object:generate=true
package pub
