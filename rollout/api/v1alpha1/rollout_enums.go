package v1alpha1

import (
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Annotations that carry, on v1alpha1 objects, what v1beta1 expresses with fields.
const (
	// RolloutStyleAnnotation selects the rolling style of a Rollout ("canary", the default, or
	// "partition", case-insensitive) or a BatchRelease ("canary", "partition" or "bluegreen").
	RolloutStyleAnnotation = rolloutsv1beta1.RollingStyleAnnotation
	// TrafficRoutingAnnotation names the TrafficRouting a Rollout drives.
	TrafficRoutingAnnotation = rolloutsv1beta1.TrafficRoutingAnnotation
)

// RollingStyleType is how a release updates the workload.
type RollingStyleType string

// Rolling styles; the annotation carries them in lower case.
const (
	// PartitionRollingStyle updates pods in place batch by batch.
	PartitionRollingStyle RollingStyleType = "Partition"
	// CanaryRollingStyle releases through an extra canary Deployment.
	CanaryRollingStyle RollingStyleType = "Canary"
	// BlueGreenRollingStyle surges the new revision beside the old one.
	BlueGreenRollingStyle RollingStyleType = "BlueGreen"
)

// CanaryStepState is the state of the current step of a release.
type CanaryStepState string

// Step states, in the order a step goes through them.
const (
	CanaryStepStateInit            CanaryStepState = "BeforeStepUpgrade"
	CanaryStepStateUpgrade         CanaryStepState = "StepUpgrade"
	CanaryStepStateTrafficRouting  CanaryStepState = "StepTrafficRouting"
	CanaryStepStateMetricsAnalysis CanaryStepState = "StepMetricsAnalysis"
	CanaryStepStatePaused          CanaryStepState = "StepPaused"
	CanaryStepStateReady           CanaryStepState = "StepReady"
	CanaryStepStateCompleted       CanaryStepState = "Completed"
)

// FinalizeStateType is a sub-step of finalising a release; the values are those of
// rolloutsv1beta1.FinalisingStepType.
type FinalizeStateType string

// RolloutPhase is the phase of a Rollout or a BatchRelease.
type RolloutPhase string

// Phases; Preparing, Finalizing and Completed are used by BatchRelease only.
const (
	RolloutPhaseInitial     RolloutPhase = "Initial"
	RolloutPhaseHealthy     RolloutPhase = "Healthy"
	RolloutPhaseProgressing RolloutPhase = "Progressing"
	RolloutPhaseTerminating RolloutPhase = "Terminating"
	RolloutPhaseDisabled    RolloutPhase = "Disabled"
	RolloutPhaseDisabling   RolloutPhase = "Disabling"
	RolloutPhasePreparing   RolloutPhase = "Preparing"
	RolloutPhaseFinalizing  RolloutPhase = "Finalizing"
	RolloutPhaseCompleted   RolloutPhase = "Completed"
)

// RolloutConditionType is the type of a RolloutCondition.
type RolloutConditionType string

// Condition types; their reasons are those of the v1beta1 package.
const (
	RolloutConditionProgressing RolloutConditionType = "Progressing"
	RolloutConditionSucceeded   RolloutConditionType = "Succeeded"
	RolloutConditionTerminating RolloutConditionType = "Terminating"
)
