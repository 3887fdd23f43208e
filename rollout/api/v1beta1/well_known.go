package v1beta1

// Labels and annotations on workloads, written by the workload webhook and the Rollout and BatchRelease
// controllers.
const (
	// InProgressingAnnotation on a workload marks a release in progress; its value is the JSON of
	// InProgressingState. Set by the workload webhook, removed when finalising starts.
	InProgressingAnnotation = "rollouts.kruise.io/in-progressing"

	// BatchReleaseControlAnnotation on a workload (and a canary Deployment) holds the JSON
	// metav1.OwnerReference of the BatchRelease that controls it.
	BatchReleaseControlAnnotation = "batchrelease.rollouts.kruise.io/control-info"

	// WorkloadTypeLabel on a workload is what the workload webhooks select on; a custom
	// StatefulSet-like kind opts in with the value "statefulset".
	WorkloadTypeLabel = "rollouts.kruise.io/workload-type"

	// DeploymentStableRevisionLabel on a Deployment is the pod-template-hash of the stable ReplicaSet.
	DeploymentStableRevisionLabel = "rollouts.kruise.io/stable-revision"

	// DeploymentStrategyAnnotation on a Deployment holds the JSON DeploymentStrategy of a
	// partition-style release.
	DeploymentStrategyAnnotation = "rollouts.kruise.io/deployment-strategy"

	// DeploymentExtraStatusAnnotation on a Deployment holds the JSON DeploymentExtraStatus.
	DeploymentExtraStatusAnnotation = "rollouts.kruise.io/deployment-extra-status"

	// AdvancedDeploymentControlLabel set to "true" on a Deployment hands it to the Advanced Deployment
	// controller.
	AdvancedDeploymentControlLabel = "rollouts.kruise.io/controlled-by-advanced-deployment-controller"

	// OriginalDeploymentStrategyAnnotation on a Deployment or CloneSet holds the JSON
	// OriginalDeploymentStrategy saved by a blue-green release.
	OriginalDeploymentStrategyAnnotation = "rollouts.kruise.io/original-deployment-strategy"

	// CanaryDeploymentLabel on a canary Deployment is the name of its stable Deployment.
	CanaryDeploymentLabel = "rollouts.kruise.io/canary-deployment"

	// DaemonSetRevisionAnnotation on a native DaemonSet holds a JSON object with the keys
	// "canary-revision" and "stable-revision".
	DaemonSetRevisionAnnotation = "rollouts.kruise.io/daemonset-revision"

	// DaemonSetAdvancedControlAnnotation on a native DaemonSet holds a JSON object with the keys
	// "partition" (pods to keep, as a decimal string) and "batch-revision"; it drives batch-by-batch pod
	// deletion.
	DaemonSetAdvancedControlAnnotation = "rollouts.kruise.io/daemonset-advanced-control"

	// DaemonSetOriginalUpdateStrategyAnnotation on a native DaemonSet is its updateStrategy type before
	// the release switched it to OnDelete.
	DaemonSetOriginalUpdateStrategyAnnotation = "rollouts.kruise.io/daemonset-original-update-strategy"

	// RolloutIDLabel identifies a release: read from workload labels and annotations, written to the
	// labels of the pods of the update revision.
	RolloutIDLabel = "rollouts.kruise.io/rollout-id"

	// RolloutBatchIDLabel on a pod is the 1-based batch that upgraded it (only with a rollout-id).
	RolloutBatchIDLabel = "rollouts.kruise.io/rollout-batch-id"

	// NoNeedUpdatePodLabel on a pod marks it as left alone by a rollback in batches; the value is the
	// rollout-id.
	NoNeedUpdatePodLabel = "rollouts.kruise.io/no-need-update"
)

// Values of WorkloadTypeLabel.
const (
	WorkloadTypeDeployment  = "deployment"
	WorkloadTypeCloneSet    = "cloneset"
	WorkloadTypeStatefulSet = "statefulset"
	WorkloadTypeDaemonSet   = "daemonset"
)

// Annotations and labels on Rollouts and related objects.
const (
	// RollingStyleAnnotation on a v1alpha1 Rollout or BatchRelease carries the rolling style in lower
	// case ("canary", "partition", "bluegreen"); v1beta1 has fields for it.
	RollingStyleAnnotation = "rollouts.kruise.io/rolling-style"

	// RollbackInBatchAnnotation set to "true" on a Rollout rolls back in batches instead of at once
	// (CloneSet and StatefulSet without traffic routing only); copied to the BatchRelease.
	RollbackInBatchAnnotation = "rollouts.kruise.io/rollback-in-batch"

	// RolloutHashAnnotation on a Rollout is the hash of its step plan.
	RolloutHashAnnotation = "rollouts.kruise.io/hash"

	// TrafficRoutingAnnotation on a Rollout names the TrafficRouting it drives; it is what selects a
	// TrafficRouting (spec.strategy.canary.trafficRoutingRef is kept for compatibility).
	TrafficRoutingAnnotation = "rollouts.kruise.io/trafficrouting"

	// OriginalSpecConfigurationAnnotation on a custom network object holds the JSON of its spec, labels
	// and annotations before the first routing change.
	OriginalSpecConfigurationAnnotation = "rollouts.kruise.io/original-spec-configuration"

	// RolloutNameLabel on a RolloutHistory is the name of its Rollout.
	RolloutNameLabel = "rollouts.kruise.io/rollout-name"
)

// Finalizers.
const (
	// RolloutFinalizer is on every Rollout until finalising after deletion is done.
	RolloutFinalizer = "rollouts.kruise.io/rollout"
	// BatchReleaseFinalizer is on a BatchRelease until its phase is Completed.
	BatchReleaseFinalizer = "rollouts.kruise.io/batch-release-finalizer"
	// CanaryDeploymentFinalizer is on a canary Deployment until the release is finalised.
	CanaryDeploymentFinalizer = "finalizer.rollouts.kruise.io/batch-release"
	// TrafficRoutingFinalizer is a TrafficRouting's own finalizer.
	TrafficRoutingFinalizer = "rollouts.kruise.io/trafficrouting"
	// ProgressingRolloutFinalizerPrefix prefixes the finalizer a progressing Rollout puts on the
	// TrafficRouting it drives; see ProgressingRolloutFinalizer.
	ProgressingRolloutFinalizerPrefix = "progressing.rollouts.kruise.io"
)

// ProgressingRolloutFinalizer is the finalizer a progressing Rollout with the given name puts on its
// TrafficRouting.
func ProgressingRolloutFinalizer(rolloutName string) string {
	return ProgressingRolloutFinalizerPrefix + "/" + rolloutName
}

// HPADisableSuffix is appended to an HPA's spec.scaleTargetRef.name to disable it during a blue-green
// release, and removed afterwards.
const HPADisableSuffix = "-DisableByRollout"

// Revision label keys: the pod label that tells a pod's revision.
const (
	// PodTemplateHashLabelKey for Deployment and CloneSet.
	PodTemplateHashLabelKey = "pod-template-hash"
	// ControllerRevisionHashLabelKey for StatefulSet, Advanced StatefulSet and both DaemonSets (their pods
	// carry no pod-template-hash).
	ControllerRevisionHashLabelKey = "controller-revision-hash"
)

// InProgressingState is the JSON value of InProgressingAnnotation.
type InProgressingState struct {
	// RolloutName is the Rollout releasing the workload.
	RolloutName string `json:"rolloutName"`
}
