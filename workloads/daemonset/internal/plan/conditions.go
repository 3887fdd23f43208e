package plan

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The conditions Flotilla adds to an Advanced DaemonSet (upstream sets none), in the types kstatus reads, so
// that Flux and Helm's --wait tell a DaemonSet still rolling from one that is done or stuck.
const (
	ConditionReady       appsv1.DaemonSetConditionType = "Ready"
	ConditionReconciling appsv1.DaemonSetConditionType = "Reconciling"
	ConditionStalled     appsv1.DaemonSetConditionType = "Stalled"
)

// Reasons of those conditions.
const (
	ReasonAvailable       = "Available"
	ReasonProgressing     = "Progressing"
	ReasonUpdateHeld      = "UpdateHeld"
	ReasonPodsUnavailable = "PodsUnavailable"
)

// Failure is what kept the last reconcile from doing its work: a reason (FailedCreate, FailedDelete,
// FailedUpdate, InvalidSelector, ...) and a message for people.
type Failure struct {
	Reason, Message string
}

// Progress is what the conditions are made of.
type Progress struct {
	Counts Counts
	// Target is the number of nodes the update should reach (Target); Held says something (pause, OnDelete,
	// the partition or the selector) keeps it from reaching every node.
	Target int
	Held   bool
	// Failure is nil when the reconcile did its work.
	Failure *Failure
}

// ProgressOf is the progress of the DaemonSet in: a paused or OnDelete update is through where it stands.
func ProgressOf(in Input, c Counts, failure *Failure) Progress {
	p := Progress{Counts: c, Failure: failure, Target: Target(in)}
	if !in.Strategy.Rolling || in.Strategy.Paused {
		p.Target = min(p.Target, int(c.Updated))
	}
	p.Held = p.Target < int(c.Desired)
	return p
}

// settled: every node that should run a pod runs one, available, and no more nodes are to be updated.
func (p Progress) settled() bool {
	c := p.Counts
	return c.Current == c.Desired && c.Misscheduled == 0 && c.Available == c.Desired && int(c.Updated) >= p.Target
}

// Conditions returns prev with Ready, Reconciling and Stalled set from p; the others are kept. A condition
// whose status, reason and message stay keeps its transition time.
func Conditions(prev []appsv1.DaemonSetCondition, p Progress, now time.Time) []appsv1.DaemonSetCondition {
	out := setCondition(prev, ready(p), now)
	if p.settled() {
		out = setCondition(out, appsv1.DaemonSetCondition{Type: ConditionReconciling, Status: corev1.ConditionFalse,
			Reason: ReasonAvailable}, now)
	} else {
		out = setCondition(out, appsv1.DaemonSetCondition{Type: ConditionReconciling, Status: corev1.ConditionTrue,
			Reason: ReasonProgressing, Message: progressMessage(p.Counts, p.Target)}, now)
	}
	if p.Failure == nil {
		return removeCondition(out, ConditionStalled)
	}
	return setCondition(out, appsv1.DaemonSetCondition{Type: ConditionStalled, Status: corev1.ConditionTrue,
		Reason: p.Failure.Reason, Message: p.Failure.Message}, now)
}

func ready(p Progress) appsv1.DaemonSetCondition {
	c := p.Counts
	cond := appsv1.DaemonSetCondition{Type: ConditionReady, Status: corev1.ConditionFalse, Reason: ReasonPodsUnavailable,
		Message: fmt.Sprintf("%d of %d nodes have an available pod", c.Available, c.Desired)}
	switch {
	case !p.settled():
		if c.Available == c.Desired {
			cond.Reason, cond.Message = ReasonProgressing, progressMessage(c, p.Target)
		}
	case p.Held && int(c.Updated) < int(c.Desired):
		cond.Status, cond.Reason = corev1.ConditionTrue, ReasonUpdateHeld
		cond.Message = fmt.Sprintf("every node has an available pod; %d of %d run the update revision, as the update strategy holds it", c.Updated, c.Desired)
	default:
		cond.Status, cond.Reason = corev1.ConditionTrue, ReasonAvailable
		cond.Message = fmt.Sprintf("every node has an available pod of the update revision (%d)", c.Desired)
	}
	return cond
}

func progressMessage(c Counts, target int) string {
	return fmt.Sprintf("%d of %d nodes have an available pod, %d of %d to update run the update revision",
		c.Available, c.Desired, c.Updated, target)
}

func setCondition(conds []appsv1.DaemonSetCondition, c appsv1.DaemonSetCondition, now time.Time) []appsv1.DaemonSetCondition {
	out := make([]appsv1.DaemonSetCondition, 0, len(conds)+1)
	found := false
	for _, prev := range conds {
		if prev.Type != c.Type {
			out = append(out, prev)
			continue
		}
		found = true
		c.LastTransitionTime = prev.LastTransitionTime
		if prev.Status != c.Status || c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		out = append(out, c)
	}
	if !found {
		c.LastTransitionTime = metav1.NewTime(now)
		out = append(out, c)
	}
	return out
}

func removeCondition(conds []appsv1.DaemonSetCondition, t appsv1.DaemonSetConditionType) []appsv1.DaemonSetCondition {
	out := conds[:0:0]
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}
