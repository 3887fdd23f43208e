package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// RollingStyleType is how a release updates the workload.
type RollingStyleType string

// Rolling styles.
const (
	// PartitionRollingStyle updates pods in place batch by batch, like a CloneSet partition, without an
	// extra workload.
	PartitionRollingStyle RollingStyleType = "Partition"
	// CanaryRollingStyle releases through an extra canary Deployment (native Deployment only).
	CanaryRollingStyle RollingStyleType = "Canary"
	// BlueGreenRollingStyle surges the new revision beside the old one without an extra workload.
	BlueGreenRollingStyle RollingStyleType = "BlueGreen"
)

// Blue-green and Advanced Deployment settings applied to a workload while a release holds it.
const (
	// MaxProgressSeconds is written to progressDeadlineSeconds (MaxInt32, about 68 years).
	MaxProgressSeconds = 1<<31 - 1
	// MaxReadySeconds is written to minReadySeconds so that new pods are ready but not available; one
	// less than MaxProgressSeconds because minReadySeconds must be below progressDeadlineSeconds.
	MaxReadySeconds = MaxProgressSeconds - 1
)

// DeploymentStrategy is the Advanced Deployment strategy, stored as JSON in the Deployment annotation
// rollouts.kruise.io/deployment-strategy while the Deployment is paused with type Recreate.
type DeploymentStrategy struct {
	// RollingStyle is the release style; the Advanced Deployment controller acts only on Partition.
	RollingStyle RollingStyleType `json:"rollingStyle,omitempty"`
	// RollingUpdate is the Deployment's own rolling update settings, moved here during the release.
	RollingUpdate *appsv1.RollingUpdateDeployment `json:"rollingUpdate,omitempty"`
	// Paused blocks the upgrade of pods.
	Paused bool `json:"paused,omitempty"`
	// Partition is the number (or percentage) of pods to UPDATE, unlike a CloneSet partition which
	// counts pods to keep.
	Partition intstr.IntOrString `json:"partition,omitempty"`
}

// DeploymentExtraStatus is the Advanced Deployment status, stored as JSON in the Deployment annotation
// rollouts.kruise.io/deployment-extra-status.
type DeploymentExtraStatus struct {
	// UpdatedReadyReplicas is the number of updated and ready pods.
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas,omitempty"`
	// ExpectedUpdatedReplicas is the absolute number of pods the partition asks to update.
	ExpectedUpdatedReplicas int32 `json:"expectedUpdatedReplicas,omitempty"`
}

// OriginalDeploymentStrategy is the part of a Deployment or CloneSet a blue-green release overrides,
// stored as JSON in the annotation rollouts.kruise.io/original-deployment-strategy and restored when the
// release is finalised.
type OriginalDeploymentStrategy struct {
	// MaxUnavailable of the workload's rolling update.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// MaxSurge of the workload's rolling update.
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
	// MinReadySeconds of the workload.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// ProgressDeadlineSeconds of the Deployment.
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}
