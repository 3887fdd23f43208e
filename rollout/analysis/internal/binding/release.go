package binding

import (
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// release is what the binding reads of a Rollout's current release.
type release struct {
	// Revision is the canary revision (blue-green: the updated revision); "" before any release.
	Revision       string
	StableRevision string
	Step           int32
	State          rolloutsv1beta1.CanaryStepState
	// InProgress: the Rollout is Progressing and its step state is not Completed.
	InProgress bool
}

// releaseOf reads the current release from the Rollout's canary status, else its blue-green status.
func releaseOf(ro *rolloutsv1beta1.Rollout) release {
	var rel release
	switch s := &ro.Status; {
	case s.CanaryStatus != nil:
		rel.Revision = s.CanaryStatus.CanaryRevision
	case s.BlueGreenStatus != nil:
		rel.Revision = s.BlueGreenStatus.UpdatedRevision
	}
	if sub := ro.Status.GetSubStatus(); sub != nil {
		rel.StableRevision, rel.Step, rel.State = sub.StableRevision, sub.CurrentStepIndex, sub.CurrentStepState
	}
	rel.InProgress = rel.Revision != "" && ro.Status.Phase == rolloutsv1beta1.RolloutPhaseProgressing &&
		rel.State != rolloutsv1beta1.CanaryStepStateCompleted
	return rel
}
