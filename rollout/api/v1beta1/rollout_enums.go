package v1beta1

// CanaryStepState is the state of the current step of a release.
type CanaryStepState string

// Step states, in the order a step goes through them.
const (
	// CanaryStepStateInit handles special cases (stable Service selector) before the step upgrades pods.
	CanaryStepStateInit CanaryStepState = "BeforeStepUpgrade"
	// CanaryStepStateUpgrade upgrades the step's pods through the BatchRelease.
	CanaryStepStateUpgrade CanaryStepState = "StepUpgrade"
	// CanaryStepStateTrafficRouting applies the step's traffic.
	CanaryStepStateTrafficRouting CanaryStepState = "StepTrafficRouting"
	// CanaryStepStateMetricsAnalysis is reserved for metrics analysis; it completes immediately.
	CanaryStepStateMetricsAnalysis CanaryStepState = "StepMetricsAnalysis"
	// CanaryStepStatePaused waits for the pause duration or for approval.
	CanaryStepStatePaused CanaryStepState = "StepPaused"
	// CanaryStepStateReady moves on to the next step; approval sets it.
	CanaryStepStateReady CanaryStepState = "StepReady"
	// CanaryStepStateCompleted means every step is done.
	CanaryStepStateCompleted CanaryStepState = "Completed"
)

// RolloutPhase is the phase of a Rollout or a BatchRelease.
type RolloutPhase string

// Rollout phases.
const (
	// RolloutPhaseInitial is the phase before the workload is found.
	RolloutPhaseInitial RolloutPhase = "Initial"
	// RolloutPhaseHealthy means no release is in progress.
	RolloutPhaseHealthy RolloutPhase = "Healthy"
	// RolloutPhaseProgressing means a release is in progress.
	RolloutPhaseProgressing RolloutPhase = "Progressing"
	// RolloutPhaseTerminating means the Rollout is being deleted.
	RolloutPhaseTerminating RolloutPhase = "Terminating"
	// RolloutPhaseDisabled means spec.disabled is true and resources are released.
	RolloutPhaseDisabled RolloutPhase = "Disabled"
	// RolloutPhaseDisabling means spec.disabled is true and resources are being released.
	RolloutPhaseDisabling RolloutPhase = "Disabling"
)

// RolloutConditionType is the type of a RolloutCondition.
type RolloutConditionType string

// Rollout condition types and their reasons.
const (
	// RolloutConditionProgressing is True while a release runs.
	RolloutConditionProgressing RolloutConditionType = "Progressing"
	// RolloutConditionSucceeded tells whether the last release succeeded.
	RolloutConditionSucceeded RolloutConditionType = "Succeeded"
	// RolloutConditionTerminating is True while a deleted Rollout is finalised.
	RolloutConditionTerminating RolloutConditionType = "Terminating"

	// ProgressingReasonInitializing: traffic routing is being initialised.
	ProgressingReasonInitializing = "Initializing"
	// ProgressingReasonInRolling: steps are being executed.
	ProgressingReasonInRolling = "InRolling"
	// ProgressingReasonFinalising: the release is being finalised.
	ProgressingReasonFinalising = "Finalising"
	// ProgressingReasonCompleted: the release is finished.
	ProgressingReasonCompleted = "Completed"
	// ProgressingReasonCancelling: the release is being cancelled (rollback).
	ProgressingReasonCancelling = "Cancelling"
	// ProgressingReasonPaused: spec.strategy.paused holds the release.
	ProgressingReasonPaused = "Paused"

	// TerminatingReasonInTerminating: the deleted Rollout is being finalised.
	TerminatingReasonInTerminating = "InTerminating"
	// TerminatingReasonCompleted: finalising the deleted Rollout is done.
	TerminatingReasonCompleted = "Completed"
)

// Reasons a release is finalised.
const (
	// FinaliseReasonSuccess: the last step is done.
	FinaliseReasonSuccess = "Success"
	// FinaliseReasonRollback: the workload was rolled back.
	FinaliseReasonRollback = "Rollback"
	// FinaliseReasonContinuous: a newer revision replaced the one being released.
	FinaliseReasonContinuous = "Continuous"
	// FinaliseReasonDisabled: the Rollout was disabled.
	FinaliseReasonDisabled = "RolloutDisabled"
	// FinaliseReasonDelete: the Rollout is being deleted.
	FinaliseReasonDelete = "RolloutDeleting"
)

// FinalisingStepType is a sub-step of finalising a release.
type FinalisingStepType string

// Finalising steps.
const (
	// FinalisingStepRouteTrafficToNew routes all traffic to the new revision (blue-green).
	FinalisingStepRouteTrafficToNew FinalisingStepType = "FinalisingStepRouteTrafficToNew"
	// FinalisingStepRouteTrafficToStable restores the gateway, ingress or custom routes.
	FinalisingStepRouteTrafficToStable FinalisingStepType = "FinalisingStepRouteTrafficToStable"
	// FinalisingStepRestoreStableService removes the revision selector from the stable Service.
	FinalisingStepRestoreStableService FinalisingStepType = "RestoreStableService"
	// FinalisingStepRemoveCanaryService deletes the canary Service.
	FinalisingStepRemoveCanaryService FinalisingStepType = "RemoveCanaryService"
	// FinalisingStepResumeWorkload releases the remaining pods (unpause, partition 0).
	FinalisingStepResumeWorkload FinalisingStepType = "ResumeWorkload"
	// FinalisingStepReleaseWorkloadControl deletes the BatchRelease and its control of the workload.
	FinalisingStepReleaseWorkloadControl FinalisingStepType = "ReleaseWorkloadControl"
	// FinalisingStepTypeEnd means finalising is done.
	FinalisingStepTypeEnd FinalisingStepType = "END"
	// FinalisingStepWaitEndless never completes; for debugging.
	FinalisingStepWaitEndless FinalisingStepType = "WaitEndless"
)
