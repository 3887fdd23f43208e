// Package feature holds the manager's feature gates: one typed constant per gate, their defaults, and Gates,
// the form the modules receive them in. A module reads its gates once, at wiring time (its setup.go), through
// the constants, and passes booleans down; nothing below a module's setup imports this package, and nothing
// but the composition root uses the featuregate machinery (.golangci.yml).
package feature

import (
	"fmt"

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
	// PreDownloadImageForInPlaceUpdate creates ImagePullJobs that pull a CloneSet's or an Advanced StatefulSet's
	// new images on the nodes of its old pods before they are updated in place (upstream's gate, off by default
	// as upstream).
	PreDownloadImageForInPlaceUpdate featuregate.Feature = "PreDownloadImageForInPlaceUpdate"
	// PreDownloadImageForDaemonSetUpdate creates ImagePullJobs that pull an Advanced DaemonSet's new images on
	// the nodes of its old pods before they are updated (upstream's gate, off by default as upstream).
	PreDownloadImageForDaemonSetUpdate featuregate.Feature = "PreDownloadImageForDaemonSetUpdate"
	// RecreatePodWhenChangeVCTInCloneSetGate recreates CloneSet pods, with new claims, instead of updating
	// them in place when the volumeClaimTemplates changed together with the template (upstream's gate, off).
	RecreatePodWhenChangeVCTInCloneSetGate featuregate.Feature = "RecreatePodWhenChangeVCTInCloneSetGate"
	// StatefulSetAutoDeletePVC applies an Advanced StatefulSet's persistentVolumeClaimRetentionPolicy
	// (upstream's gate, on by default as upstream).
	StatefulSetAutoDeletePVC featuregate.Feature = "StatefulSetAutoDeletePVC"
	// StatefulSetStartOrdinal numbers an Advanced StatefulSet's pods from spec.ordinals.start (upstream's gate,
	// off by default as upstream).
	StatefulSetStartOrdinal featuregate.Feature = "StatefulSetStartOrdinal"
	// StatefulSetAutoResizePVCGate lets an Advanced StatefulSet's claims follow larger volumeClaimTemplates
	// with volumeClaimUpdateStrategy OnPodRollingUpdate (upstream's gate, off by default as upstream).
	StatefulSetAutoResizePVCGate featuregate.Feature = "StatefulSetAutoResizePVCGate"
	// SidecarSetPatchPodMetadataDefaultsAllowed lets a SidecarSet's patchPodMetadata set any pod annotation;
	// without it only those the kruise-configuration whitelist allows (upstream's gate, off by default as
	// upstream).
	SidecarSetPatchPodMetadataDefaultsAllowed featuregate.Feature = "SidecarSetPatchPodMetadataDefaultsAllowed"
	// PodIndexLabel labels an Advanced StatefulSet's pods with their ordinal, apps.kubernetes.io/pod-index
	// (upstream's gate, on by default as upstream).
	PodIndexLabel featuregate.Feature = "PodIndexLabel"
	// SidecarTerminator stops the sidecars of a Job-like pod, those with env
	// KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT=true, once its main containers finished (upstream's gate, off by
	// default as upstream).
	SidecarTerminator featuregate.Feature = "SidecarTerminator"
	// ResourceDistributionGate runs the ResourceDistribution controller, which copies a Secret or ConfigMap
	// into many namespaces; while it is off the ResourceDistribution webhook refuses every create and update,
	// as upstream's does (upstream's gate, off by default as upstream: the controller reads and writes every
	// namespace's Secrets).
	ResourceDistributionGate featuregate.Feature = "ResourceDistributionGate"
	// ImagePullJobGate runs the ImagePullJob and ImageListPullJob controllers, which write the images to pull
	// into NodeImages and copy pull secrets for the node agent; while it is off their validating webhooks
	// refuse every create and update, as upstream's do (upstream's gate, off by default as upstream).
	// PreDownloadImageForInPlaceUpdate and PreDownloadImageForDaemonSetUpdate turn it on, as upstream's
	// dependencies do: the pre-download creates ImagePullJobs.
	ImagePullJobGate featuregate.Feature = "ImagePullJobGate"
	// PodProbeMarkerGate runs the PodProbeMarker and NodePodProbe controllers: a PodProbeMarker's probes are
	// written into the NodePodProbes of its pods' nodes for the node agents to run, and their results become
	// pod conditions, labels and annotations. While it is off the PodProbeMarker webhook refuses every create
	// and change of a spec, as upstream's does (upstream's gate, on by default as upstream).
	PodProbeMarkerGate featuregate.Feature = "PodProbeMarkerGate"
	// ResourcesDeletionProtection refuses deleting objects labelled policy.kruise.io/delete-protection while
	// their label's rule forbids it; while it is off the deletion protection webhooks allow everything
	// (upstream's gate, off by default as upstream since v1.8).
	ResourcesDeletionProtection featuregate.Feature = "ResourcesDeletionProtection"
	// DeletionProtectionForCRDCascadingGate lets a CustomResourceDefinition labelled Cascading be deleted once
	// none of its custom resources is left; without it such a CRD cannot be deleted at all. It needs
	// ResourcesDeletionProtection (upstream's gate, off by default as upstream).
	DeletionProtectionForCRDCascadingGate featuregate.Feature = "DeletionProtectionForCRDCascadingGate"
	// PodUnavailableBudgetDeleteGate makes PodUnavailableBudgets hold pod deletions and evictions beyond their
	// budget (upstream's gate, on by default as upstream).
	PodUnavailableBudgetDeleteGate featuregate.Feature = "PodUnavailableBudgetDeleteGate"
	// PodUnavailableBudgetUpdateGate makes PodUnavailableBudgets hold pod updates that take a pod out of
	// service, in-place updates of the workload controllers included (upstream's gate, off by default as
	// upstream). With both PodUnavailableBudget gates off no PodUnavailableBudget controller runs.
	PodUnavailableBudgetUpdateGate featuregate.Feature = "PodUnavailableBudgetUpdateGate"
	// WorkloadSpread runs the WorkloadSpread module: its controller and its parts of the pod webhooks, which
	// place new pods of spread workloads in subsets (upstream's gate, on by default as upstream).
	WorkloadSpread featuregate.Feature = "WorkloadSpread"
)

// Defaults are the manager's gates with their defaults, upstream's names and maturity.
var Defaults = map[featuregate.Feature]featuregate.FeatureSpec{
	RolloutHistory:                            {Default: false, PreRelease: featuregate.Alpha},
	AdvancedDeployment:                        {Default: true, PreRelease: featuregate.Beta},
	AppendPodSelector:                         {Default: false, PreRelease: featuregate.Alpha},
	KeepWorkloadPausedOnRolloutDeletion:       {Default: false, PreRelease: featuregate.Alpha},
	PreDownloadImageForInPlaceUpdate:          {Default: false, PreRelease: featuregate.Alpha},
	PreDownloadImageForDaemonSetUpdate:        {Default: false, PreRelease: featuregate.Alpha},
	RecreatePodWhenChangeVCTInCloneSetGate:    {Default: false, PreRelease: featuregate.Alpha},
	StatefulSetAutoDeletePVC:                  {Default: true, PreRelease: featuregate.Beta},
	StatefulSetStartOrdinal:                   {Default: false, PreRelease: featuregate.Alpha},
	StatefulSetAutoResizePVCGate:              {Default: false, PreRelease: featuregate.Alpha},
	SidecarSetPatchPodMetadataDefaultsAllowed: {Default: false, PreRelease: featuregate.Alpha},
	PodIndexLabel:                             {Default: true, PreRelease: featuregate.Beta},
	SidecarTerminator:                         {Default: false, PreRelease: featuregate.Alpha},
	ResourceDistributionGate:                  {Default: false, PreRelease: featuregate.Alpha},
	ImagePullJobGate:                          {Default: false, PreRelease: featuregate.Alpha},
	PodProbeMarkerGate:                        {Default: true, PreRelease: featuregate.Beta},
	ResourcesDeletionProtection:               {Default: false, PreRelease: featuregate.Beta},
	DeletionProtectionForCRDCascadingGate:     {Default: false, PreRelease: featuregate.Alpha},
	PodUnavailableBudgetDeleteGate:            {Default: true, PreRelease: featuregate.Beta},
	PodUnavailableBudgetUpdateGate:            {Default: false, PreRelease: featuregate.Alpha},
	WorkloadSpread:                            {Default: true, PreRelease: featuregate.Beta},
}

// NewGate returns a mutable gate set holding Defaults.
func NewGate() (featuregate.MutableFeatureGate, error) {
	gate := featuregate.NewFeatureGate()
	if err := gate.Add(Defaults); err != nil {
		return nil, err
	}
	return gate, nil
}

// Gates are the manager's feature gates as resolved at start-up.
type Gates struct {
	enabled map[featuregate.Feature]bool
}

// Resolve reads every gate of Defaults from fg, the gates the manager's flags set.
func Resolve(fg featuregate.FeatureGate) Gates {
	enabled := make(map[featuregate.Feature]bool, len(Defaults))
	for gate := range Defaults {
		enabled[gate] = fg.Enabled(gate)
	}
	return Gates{enabled: enabled}
}

// Enabled reports whether gate is on. A gate missing from Defaults is a programming error, not an input, and
// reading it as off would hide it: Enabled panics instead, so the manager stops at start-up (gates are read
// only while wiring) and a test that reads a module's gates fails.
func (g Gates) Enabled(gate featuregate.Feature) bool {
	on, ok := g.enabled[gate]
	if !ok {
		panic(fmt.Sprintf("feature gate %q is not in feature.Defaults", gate))
	}
	return on
}

// ImagePullJobsOn reports whether the manager runs the ImagePullJob and ImageListPullJob controllers:
// ImagePullJobGate is on, or a pre-download gate, which turns it on as upstream's gate dependencies do (the
// workloads' image pre-download creates ImagePullJobs).
func (g Gates) ImagePullJobsOn() bool {
	return g.Enabled(ImagePullJobGate) || g.Enabled(PreDownloadImageForInPlaceUpdate) || g.Enabled(PreDownloadImageForDaemonSetUpdate)
}
