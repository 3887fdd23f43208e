package plan

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Reasons of the job's conditions, upstream's.
const (
	ReasonInitialized      = "Initialized"
	ReasonMatchEmpty       = "MatchEmpty"
	ReasonMatched          = "Matched"
	ReasonContainerFailed  = "ContainerFailed"
	ReasonJobFailed        = "JobFailed"
	ReasonJobSucceeded     = "JobSucceeded"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonError            = "Error"
)

// NextStatus is the job's status given its targets' counts, as upstream computes it. The phase is, in order:
// Error without containers to inject; Waiting when no pod matches; Running while a target runs; Waiting while
// one waits; once every target finished, Failed if one failed, else Succeeded (and the job completes); Unknown
// otherwise. A paused job that has not finished is Paused; a Waiting, Running or Unknown job past its
// activeDeadlineSeconds Failed. Conditions change their transition time only when their status changes.
func NextStatus(job *kruiseappsv1alpha1.EphemeralJob, c Counts, now time.Time) kruiseappsv1alpha1.EphemeralJobStatus {
	s := *job.Status.DeepCopy()
	t := metav1.NewTime(now)
	if s.StartTime == nil {
		s.StartTime = &t
	}
	s.Matches, s.Waiting, s.Running, s.Succeeded, s.Failed = c.Matches, c.Waiting, c.Running, c.Succeeded, c.Failed
	set := func(typ kruiseappsv1alpha1.EphemeralJobConditionType, status corev1.ConditionStatus, reason, msg string) {
		s.Conditions = SetCondition(s.Conditions, typ, status, reason, msg, now)
	}
	set(kruiseappsv1alpha1.EJobInitialized, corev1.ConditionTrue, ReasonInitialized, "")
	if c.Failed > 0 {
		set(kruiseappsv1alpha1.EJobFailed, corev1.ConditionTrue, ReasonContainerFailed,
			fmt.Sprintf("%d/%d pods have a failed ephemeral container", c.Failed, c.Matches))
	}
	if c.Matches == 0 {
		set(kruiseappsv1alpha1.EJobMatchedEmpty, corev1.ConditionTrue, ReasonMatchEmpty, "job match no pods")
	} else if hasCondition(s.Conditions, kruiseappsv1alpha1.EJobMatchedEmpty) {
		set(kruiseappsv1alpha1.EJobMatchedEmpty, corev1.ConditionFalse, ReasonMatched, fmt.Sprintf("job matches %d pods", c.Matches))
	}
	s.Phase = phase(c)
	switch {
	case len(job.Spec.Template.EphemeralContainers) == 0:
		s.Phase = kruiseappsv1alpha1.EphemeralJobError
		set(kruiseappsv1alpha1.EJobError, corev1.ConditionTrue, ReasonError, "job spec invalid fields: template.ephemeralContainers is empty")
	case s.Phase == kruiseappsv1alpha1.EphemeralJobSucceeded:
		s.CompletionTime = &t
		set(kruiseappsv1alpha1.EJobSucceeded, corev1.ConditionTrue, ReasonJobSucceeded, "job success to run all tasks")
	case s.Phase == kruiseappsv1alpha1.EphemeralJobFailed:
		s.CompletionTime = &t
		set(kruiseappsv1alpha1.EJobFailed, corev1.ConditionTrue, ReasonJobFailed,
			fmt.Sprintf("job failed to run all tasks, %d/%d pods failed", c.Failed, c.Matches))
	case job.Spec.Paused:
		s.Phase = kruiseappsv1alpha1.EphemeralJobPause
	case pastDeadline(job, s.StartTime.Time, now):
		s.Phase, s.CompletionTime = kruiseappsv1alpha1.EphemeralJobFailed, &t
		set(kruiseappsv1alpha1.EJobFailed, corev1.ConditionTrue, ReasonDeadlineExceeded,
			fmt.Sprintf("EphemeralJob %s/%s was active longer than specified deadline", job.Namespace, job.Name))
	}
	return s
}

// phase is the phase the counts alone give.
func phase(c Counts) kruiseappsv1alpha1.EphemeralJobPhase {
	switch {
	case c.Matches == 0:
		return kruiseappsv1alpha1.EphemeralJobWaiting
	case c.Running > 0:
		return kruiseappsv1alpha1.EphemeralJobRunning
	case c.Waiting > 0:
		return kruiseappsv1alpha1.EphemeralJobWaiting
	case c.Succeeded+c.Failed == c.Matches && c.Failed > 0:
		return kruiseappsv1alpha1.EphemeralJobFailed
	case c.Succeeded+c.Failed == c.Matches:
		return kruiseappsv1alpha1.EphemeralJobSucceeded
	}
	return kruiseappsv1alpha1.EphemeralJobUnknown
}

// SetCondition sets the condition of type typ, keeping its times when nothing about it changes and its
// transition time when only the reason or message does.
func SetCondition(conds []kruiseappsv1alpha1.EphemeralJobCondition, typ kruiseappsv1alpha1.EphemeralJobConditionType,
	status corev1.ConditionStatus, reason, msg string, now time.Time) []kruiseappsv1alpha1.EphemeralJobCondition {
	t := metav1.NewTime(now)
	next := kruiseappsv1alpha1.EphemeralJobCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastProbeTime: t, LastTransitionTime: t}
	for i := range conds {
		old := conds[i]
		if old.Type != typ {
			continue
		}
		if old.Status == status && old.Reason == reason && old.Message == msg {
			return conds
		}
		if old.Status == status {
			next.LastTransitionTime = old.LastTransitionTime
		}
		out := append([]kruiseappsv1alpha1.EphemeralJobCondition(nil), conds...)
		out[i] = next
		return out
	}
	return append(append([]kruiseappsv1alpha1.EphemeralJobCondition(nil), conds...), next)
}

func hasCondition(conds []kruiseappsv1alpha1.EphemeralJobCondition, typ kruiseappsv1alpha1.EphemeralJobConditionType) bool {
	for _, c := range conds {
		if c.Type == typ {
			return true
		}
	}
	return false
}
