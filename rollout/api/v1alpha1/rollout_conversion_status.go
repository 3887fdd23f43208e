package v1alpha1

import (
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func rolloutStatusToV1beta1(src *RolloutStatus) rolloutsv1beta1.RolloutStatus {
	dst := rolloutsv1beta1.RolloutStatus{
		ObservedGeneration: src.ObservedGeneration,
		CanaryStatus:       canaryStatusToV1beta1(src.CanaryStatus),
		Conditions:         convertSlice(src.Conditions, conditionToV1beta1),
		Phase:              rolloutsv1beta1.RolloutPhase(src.Phase),
		Message:            src.Message,
	}
	dst.CurrentStepIndex, dst.CurrentStepState = stepMirrorOf(src.CanaryStatus)
	return dst
}

func rolloutStatusFromV1beta1(src *rolloutsv1beta1.RolloutStatus, saved *rolloutHubData) RolloutStatus {
	dst := RolloutStatus{
		ObservedGeneration: src.ObservedGeneration,
		CanaryStatus:       canaryStatusFromV1beta1(src.CanaryStatus),
		Conditions:         convertSlice(src.Conditions, conditionFromV1beta1),
		Phase:              RolloutPhase(src.Phase),
		Message:            src.Message,
	}
	saved.BlueGreenStatus = src.BlueGreenStatus.DeepCopy()
	index, state := stepMirrorOf(dst.CanaryStatus)
	if index != src.CurrentStepIndex || state != src.CurrentStepState {
		saved.StepMirror = &stepMirror{
			Index: src.CurrentStepIndex, State: src.CurrentStepState,
			SeenIndex: index, SeenState: state,
		}
	}
	return dst
}

// stepMirrorOf is what v1beta1's top-level currentStepIndex and currentStepState show for a canary status.
func stepMirrorOf(status *CanaryStatus) (int32, rolloutsv1beta1.CanaryStepState) {
	if status == nil {
		return 0, ""
	}
	return status.CurrentStepIndex, rolloutsv1beta1.CanaryStepState(status.CurrentStepState)
}

func canaryStatusToV1beta1(src *CanaryStatus) *rolloutsv1beta1.CanaryStatus {
	if src == nil {
		return nil
	}
	return &rolloutsv1beta1.CanaryStatus{
		CommonStatus: rolloutsv1beta1.CommonStatus{
			ObservedWorkloadGeneration: src.ObservedWorkloadGeneration,
			ObservedRolloutID:          src.ObservedRolloutID,
			RolloutHash:                src.RolloutHash,
			StableRevision:             src.StableRevision,
			PodTemplateHash:            src.PodTemplateHash,
			CurrentStepIndex:           src.CurrentStepIndex,
			NextStepIndex:              src.NextStepIndex,
			FinalisingStep:             rolloutsv1beta1.FinalisingStepType(src.FinalisingStep),
			CurrentStepState:           rolloutsv1beta1.CanaryStepState(src.CurrentStepState),
			Message:                    src.Message,
			LastUpdateTime:             copyTime(src.LastUpdateTime),
		},
		CanaryRevision:      src.CanaryRevision,
		CanaryReplicas:      src.CanaryReplicas,
		CanaryReadyReplicas: src.CanaryReadyReplicas,
	}
}

func canaryStatusFromV1beta1(src *rolloutsv1beta1.CanaryStatus) *CanaryStatus {
	if src == nil {
		return nil
	}
	return &CanaryStatus{
		ObservedWorkloadGeneration: src.ObservedWorkloadGeneration,
		ObservedRolloutID:          src.ObservedRolloutID,
		RolloutHash:                src.RolloutHash,
		StableRevision:             src.StableRevision,
		CanaryRevision:             src.CanaryRevision,
		PodTemplateHash:            src.PodTemplateHash,
		CanaryReplicas:             src.CanaryReplicas,
		CanaryReadyReplicas:        src.CanaryReadyReplicas,
		NextStepIndex:              src.NextStepIndex,
		CurrentStepIndex:           src.CurrentStepIndex,
		CurrentStepState:           CanaryStepState(src.CurrentStepState),
		Message:                    src.Message,
		LastUpdateTime:             copyTime(src.LastUpdateTime),
		FinalisingStep:             FinalizeStateType(src.FinalisingStep),
	}
}

func conditionToV1beta1(src *RolloutCondition) rolloutsv1beta1.RolloutCondition {
	return rolloutsv1beta1.RolloutCondition{
		Type:               rolloutsv1beta1.RolloutConditionType(src.Type),
		Status:             src.Status,
		LastUpdateTime:     *src.LastUpdateTime.DeepCopy(),
		LastTransitionTime: *src.LastTransitionTime.DeepCopy(),
		Reason:             src.Reason,
		Message:            src.Message,
	}
}

func conditionFromV1beta1(src *rolloutsv1beta1.RolloutCondition) RolloutCondition {
	return RolloutCondition{
		Type:               RolloutConditionType(src.Type),
		Status:             src.Status,
		LastUpdateTime:     *src.LastUpdateTime.DeepCopy(),
		LastTransitionTime: *src.LastTransitionTime.DeepCopy(),
		Reason:             src.Reason,
		Message:            src.Message,
	}
}
