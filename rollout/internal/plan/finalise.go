package plan

import (
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Finalising orders, per reason and strategy. Traffic is taken back before the workload is resumed when a
// release is abandoned, and only after it when the new version won.
var (
	canaryForward = []rolloutsv1beta1.FinalisingStepType{
		rolloutsv1beta1.FinalisingStepRestoreStableService,
		rolloutsv1beta1.FinalisingStepRouteTrafficToStable,
		rolloutsv1beta1.FinalisingStepRemoveCanaryService,
		rolloutsv1beta1.FinalisingStepResumeWorkload,
		rolloutsv1beta1.FinalisingStepReleaseWorkloadControl,
	}
	canaryRollback = []rolloutsv1beta1.FinalisingStepType{
		rolloutsv1beta1.FinalisingStepRouteTrafficToStable,
		rolloutsv1beta1.FinalisingStepResumeWorkload,
		rolloutsv1beta1.FinalisingStepReleaseWorkloadControl,
		rolloutsv1beta1.FinalisingStepRestoreStableService,
		rolloutsv1beta1.FinalisingStepRemoveCanaryService,
	}
	blueGreenSuccess = []rolloutsv1beta1.FinalisingStepType{
		rolloutsv1beta1.FinalisingStepRouteTrafficToNew,
		rolloutsv1beta1.FinalisingStepRestoreStableService,
		rolloutsv1beta1.FinalisingStepResumeWorkload,
		rolloutsv1beta1.FinalisingStepRouteTrafficToStable,
		rolloutsv1beta1.FinalisingStepRemoveCanaryService,
		rolloutsv1beta1.FinalisingStepReleaseWorkloadControl,
	}
	blueGreenOther = []rolloutsv1beta1.FinalisingStepType{
		rolloutsv1beta1.FinalisingStepRouteTrafficToStable,
		rolloutsv1beta1.FinalisingStepRestoreStableService,
		rolloutsv1beta1.FinalisingStepResumeWorkload,
		rolloutsv1beta1.FinalisingStepRemoveCanaryService,
		rolloutsv1beta1.FinalisingStepReleaseWorkloadControl,
	}
)

// FinalisingSteps is the order of finalising steps for a reason.
func FinalisingSteps(reason string, blueGreen bool) []rolloutsv1beta1.FinalisingStepType {
	switch {
	case blueGreen && reason == rolloutsv1beta1.FinaliseReasonSuccess:
		return blueGreenSuccess
	case blueGreen:
		return blueGreenOther
	case reason == rolloutsv1beta1.FinaliseReasonRollback:
		return canaryRollback
	default:
		return canaryForward
	}
}

// NextFinalisingStep is the step after current ("" starts, END ends). A step foreign to the order restarts it,
// which is safe because every finalising step is idempotent.
func NextFinalisingStep(reason string, blueGreen bool, current rolloutsv1beta1.FinalisingStepType) rolloutsv1beta1.FinalisingStepType {
	order := FinalisingSteps(reason, blueGreen)
	if current == "" {
		return order[0]
	}
	for i, s := range order {
		if s == current {
			if i+1 < len(order) {
				return order[i+1]
			}
			return rolloutsv1beta1.FinalisingStepTypeEnd
		}
	}
	if current == rolloutsv1beta1.FinalisingStepTypeEnd {
		return current
	}
	return order[0]
}

// FinalizingPolicy is how the BatchRelease releases the workload for a reason: a successful release waits for
// the workload to finish, anything else lets go at once.
func FinalizingPolicy(reason string) rolloutsv1beta1.FinalizingPolicyType {
	if reason == rolloutsv1beta1.FinaliseReasonSuccess {
		return rolloutsv1beta1.WaitResumeFinalizingPolicyType
	}
	return rolloutsv1beta1.ImmediateFinalizingPolicyType
}
