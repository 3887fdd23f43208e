// Package admission holds the decisions of the Rollout engine's admission webhooks as pure functions: the
// validation of Rollouts (v1beta1, and v1alpha1 through conversion) and the freezing of a workload whose pod
// template changes while a Rollout references it. Nothing here talks to the API server; the thin handlers in
// package webhooks decode requests, read what these functions need and answer.
package admission
