package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Event is a user-visible transition of a job, recorded as a Kubernetes event on it.
type Event struct {
	Type, Reason, Note string
}

// Reasons of the job's events beyond its condition reasons.
const (
	EventPaused       = "Paused"
	EventResumed      = "Resumed"
	EventMatchedEmpty = "MatchedEmpty"
	EventJobError     = "JobError"
)

// Events are the transitions from status old to next: pausing and resuming, matching no pod, a target whose
// containers failed, and the job's end.
func Events(old, next *kruiseappsv1alpha1.EphemeralJobStatus) []Event {
	var out []Event
	add := func(typ, reason, format string, args ...any) {
		out = append(out, Event{Type: typ, Reason: reason, Note: fmt.Sprintf(format, args...)})
	}
	if conditionTrue(next, kruiseappsv1alpha1.EJobMatchedEmpty) && !conditionTrue(old, kruiseappsv1alpha1.EJobMatchedEmpty) {
		add(corev1.EventTypeNormal, EventMatchedEmpty, "The selector matches no active pod")
	}
	if next.Failed > old.Failed {
		add(corev1.EventTypeWarning, ReasonContainerFailed, "%d/%d pods have a failed ephemeral container", next.Failed, next.Matches)
	}
	if next.Phase == old.Phase {
		return out
	}
	switch next.Phase {
	case kruiseappsv1alpha1.EphemeralJobPause:
		add(corev1.EventTypeNormal, EventPaused, "Paused: no more pods get the ephemeral containers")
	case kruiseappsv1alpha1.EphemeralJobSucceeded:
		add(corev1.EventTypeNormal, ReasonJobSucceeded, "Ephemeral containers succeeded in %d/%d pods", next.Succeeded, next.Matches)
	case kruiseappsv1alpha1.EphemeralJobFailed:
		c := condition(next, kruiseappsv1alpha1.EJobFailed)
		add(corev1.EventTypeWarning, c.Reason, "%s", c.Message)
	case kruiseappsv1alpha1.EphemeralJobError:
		add(corev1.EventTypeWarning, EventJobError, "%s", condition(next, kruiseappsv1alpha1.EJobError).Message)
	default:
		if old.Phase == kruiseappsv1alpha1.EphemeralJobPause {
			add(corev1.EventTypeNormal, EventResumed, "Resumed: pods get the ephemeral containers again")
		}
	}
	return out
}

func condition(s *kruiseappsv1alpha1.EphemeralJobStatus, typ kruiseappsv1alpha1.EphemeralJobConditionType) kruiseappsv1alpha1.EphemeralJobCondition {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return kruiseappsv1alpha1.EphemeralJobCondition{Type: typ}
}

func conditionTrue(s *kruiseappsv1alpha1.EphemeralJobStatus, typ kruiseappsv1alpha1.EphemeralJobConditionType) bool {
	return condition(s, typ).Status == corev1.ConditionTrue
}
