// Package feature holds the manager's feature gates. Gates are read once, at wiring time, and passed down as
// booleans; nothing below the composition root imports this package.
package feature

import (
	"k8s.io/component-base/featuregate"
)

const (
	// RolloutHistory records a RolloutHistory object for each release that carries a rollout-id.
	RolloutHistory featuregate.Feature = "RolloutHistory"
	// AdvancedDeployment lets Flotilla drive partition-style Deployment releases through the Deployment's
	// ReplicaSets. Upstream defaults it off in code but on in every install; Flotilla defaults it on.
	AdvancedDeployment featuregate.Feature = "AdvancedDeployment"
	// AppendPodSelector appends patchPodTemplateMetadata label keys to the canary Service selector.
	AppendPodSelector featuregate.Feature = "AppendPodSelector"
	// KeepWorkloadPausedOnRolloutDeletion keeps the workload's partition when its Rollout is deleted mid-release.
	KeepWorkloadPausedOnRolloutDeletion featuregate.Feature = "KeepWorkloadPausedOnRolloutDeletion"
	// PreDownloadImageForInPlaceUpdate creates ImagePullJobs that pull a CloneSet's new images on the nodes of
	// its old pods before they are updated in place (upstream's gate, off by default as upstream).
	PreDownloadImageForInPlaceUpdate featuregate.Feature = "PreDownloadImageForInPlaceUpdate"
	// RecreatePodWhenChangeVCTInCloneSetGate recreates CloneSet pods, with new claims, instead of updating
	// them in place when the volumeClaimTemplates changed together with the template (upstream's gate, off).
	RecreatePodWhenChangeVCTInCloneSetGate featuregate.Feature = "RecreatePodWhenChangeVCTInCloneSetGate"
)

// Defaults are the manager's gates with their defaults, upstream's names and maturity.
var Defaults = map[featuregate.Feature]featuregate.FeatureSpec{
	RolloutHistory:                         {Default: false, PreRelease: featuregate.Alpha},
	AdvancedDeployment:                     {Default: true, PreRelease: featuregate.Beta},
	AppendPodSelector:                      {Default: false, PreRelease: featuregate.Alpha},
	KeepWorkloadPausedOnRolloutDeletion:    {Default: false, PreRelease: featuregate.Alpha},
	PreDownloadImageForInPlaceUpdate:       {Default: false, PreRelease: featuregate.Alpha},
	RecreatePodWhenChangeVCTInCloneSetGate: {Default: false, PreRelease: featuregate.Alpha},
}

// NewGate returns a mutable gate set holding Defaults.
func NewGate() (featuregate.MutableFeatureGate, error) {
	gate := featuregate.NewFeatureGate()
	if err := gate.Add(Defaults); err != nil {
		return nil, err
	}
	return gate, nil
}
