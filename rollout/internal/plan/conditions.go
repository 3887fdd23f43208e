package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// kstatus condition types. Flux and Helm's --wait read them; upstream clients ignore them.
const (
	ConditionReady       rolloutsv1beta1.RolloutConditionType = "Ready"
	ConditionReconciling rolloutsv1beta1.RolloutConditionType = "Reconciling"
	ConditionStalled     rolloutsv1beta1.RolloutConditionType = "Stalled"
)

// Reasons of the kstatus conditions.
const (
	ReasonCompleted          = "Completed"
	ReasonProgressing        = "Progressing"
	ReasonAwaitingApproval   = "AwaitingApproval"
	ReasonPaused             = "Paused"
	ReasonWorkloadNotFound   = "WorkloadNotFound"
	ReasonDisabled           = "Disabled"
	ReasonTerminating        = "Terminating"
	ReasonInvalid            = "InvalidSpec"
	ReasonTrafficUnavailable = "TrafficRoutingUnavailable"
	ReasonBatchReleaseFailed = "BatchReleaseFailed"
	ReasonTrafficFailed      = "TrafficRoutingFailed"
)

// Health is how a Rollout stands, as kstatus should see it.
type Health struct {
	// Stalled: the Rollout cannot move because something is wrong (a missing workload, bad input, a batch
	// or route that cannot be made); kstatus reports it Failed.
	Stalled bool
	// Reconciling: a release is under way, moving by itself or waiting at a gate a person opens (approval,
	// resume); kstatus reports it InProgress.
	Reconciling bool
	Reason      string
	Message     string
}

// KStatusConditions sets Ready, and Reconciling or Stalled when true, onto conds; conditions of other types
// are kept as they are. An abnormal condition that is no longer true is removed, as kstatus expects.
// A condition of one of these types written by another tool (its reason is not one of ours) is left exactly
// as it is: third-party gates already write Stalled into Rollout status.
func KStatusConditions(conds []rolloutsv1beta1.RolloutCondition, h Health, now time.Time) []rolloutsv1beta1.RolloutCondition {
	ready := corev1.ConditionFalse
	if !h.Stalled && !h.Reconciling {
		ready = corev1.ConditionTrue
	}
	conds = setOrRemove(conds, ConditionReady, true, NewCondition(ConditionReady, ready, h.Reason, h.Message), now)
	conds = setOrRemove(conds, ConditionReconciling, h.Reconciling, NewCondition(ConditionReconciling, corev1.ConditionTrue, h.Reason, h.Message), now)
	return setOrRemove(conds, ConditionStalled, h.Stalled, NewCondition(ConditionStalled, corev1.ConditionTrue, h.Reason, h.Message), now)
}

func setOrRemove(conds []rolloutsv1beta1.RolloutCondition, t rolloutsv1beta1.RolloutConditionType, on bool, c rolloutsv1beta1.RolloutCondition, now time.Time) []rolloutsv1beta1.RolloutCondition {
	if old := GetCondition(conds, t); old != nil && !ownReasons[old.Reason] {
		return conds
	}
	if !on {
		return RemoveCondition(conds, t)
	}
	return SetCondition(conds, c, now)
}

// ownReasons are the reasons Flotilla writes on its kstatus conditions.
var ownReasons = map[string]bool{
	ReasonCompleted: true, ReasonProgressing: true, ReasonAwaitingApproval: true, ReasonPaused: true,
	ReasonWorkloadNotFound: true, ReasonDisabled: true, ReasonTerminating: true, ReasonInvalid: true,
	ReasonTrafficUnavailable: true, ReasonBatchReleaseFailed: true, ReasonTrafficFailed: true, "": true,
	analysisv1alpha1.ReasonAnalysisFailed: true, ReasonAnalysisInconclusive: true, analysisv1alpha1.ReasonProgressDeadlineExceeded: true,
}

// NewCondition builds a condition without timestamps; SetCondition stamps them.
func NewCondition(t rolloutsv1beta1.RolloutConditionType, s corev1.ConditionStatus, reason, msg string) rolloutsv1beta1.RolloutCondition {
	return rolloutsv1beta1.RolloutCondition{Type: t, Status: s, Reason: reason, Message: msg}
}

// GetCondition returns the condition of a type, or nil.
func GetCondition(conds []rolloutsv1beta1.RolloutCondition, t rolloutsv1beta1.RolloutConditionType) *rolloutsv1beta1.RolloutCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// SetCondition adds or replaces the condition of c's type. lastTransitionTime moves only when the status
// changes and lastUpdateTime only when something changed, so an unchanged condition writes nothing.
func SetCondition(conds []rolloutsv1beta1.RolloutCondition, c rolloutsv1beta1.RolloutCondition, now time.Time) []rolloutsv1beta1.RolloutCondition {
	ts := metav1.NewTime(now.Truncate(time.Second))
	out := make([]rolloutsv1beta1.RolloutCondition, 0, len(conds)+1)
	found := false
	for _, old := range conds {
		if old.Type != c.Type {
			out = append(out, old)
			continue
		}
		found = true
		out = append(out, merged(old, c, ts))
	}
	if !found {
		c.LastTransitionTime, c.LastUpdateTime = ts, ts
		out = append(out, c)
	}
	return out
}

func merged(old, c rolloutsv1beta1.RolloutCondition, ts metav1.Time) rolloutsv1beta1.RolloutCondition {
	if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
		return old
	}
	c.LastTransitionTime, c.LastUpdateTime = old.LastTransitionTime, ts
	if old.Status != c.Status {
		c.LastTransitionTime = ts
	}
	return c
}

// RemoveCondition drops the condition of a type.
func RemoveCondition(conds []rolloutsv1beta1.RolloutCondition, t rolloutsv1beta1.RolloutConditionType) []rolloutsv1beta1.RolloutCondition {
	out := conds[:0:0]
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}
