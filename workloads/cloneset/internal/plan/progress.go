package plan

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Messages of the Progressing condition, upstream's.
const (
	msgPaused             = "CloneSet is paused"
	msgAvailable          = "CloneSet is available"
	msgPartitionAvailable = "CloneSet has been paused due to partition ready"
	msgProgressing        = "CloneSet is progressing"
	msgDeadlineFormat     = "CloneSet revision %s has timed out progressing"
)

// Progress sets status's Progressing condition from spec.progressDeadlineSeconds and the counts already in
// status, and says how soon the deadline needs another look (0: it does not). The deadline counts from the
// moment the CloneSet began progressing; reaching its partition, completing or pausing stops the clock,
// and a new update revision starts it again. Without a deadline (or with MaxInt32, "never") the condition
// is removed.
func Progress(cs *kruiseappsv1alpha1.CloneSet, status *kruiseappsv1alpha1.CloneSetStatus, now time.Time) time.Duration {
	pds := cs.Spec.ProgressDeadlineSeconds
	if pds == nil || *pds == math.MaxInt32 {
		RemoveCondition(status, kruiseappsv1alpha1.CloneSetConditionTypeProgressing)
		return 0
	}
	prev := Condition(status, kruiseappsv1alpha1.CloneSetConditionTypeProgressing)
	next, requeue := progressing(cs, status, prev, time.Duration(*pds)*time.Second, now)
	SetCondition(status, next)
	return requeue
}

func progressing(cs *kruiseappsv1alpha1.CloneSet, s *kruiseappsv1alpha1.CloneSetStatus, prev *kruiseappsv1alpha1.CloneSetCondition,
	deadline time.Duration, now time.Time) (kruiseappsv1alpha1.CloneSetCondition, time.Duration) {
	if reason, msg, settled := settledReason(cs, s); settled {
		return transition(prev, corev1.ConditionTrue, reason, msg, now), 0
	}
	timedOut := fmt.Sprintf(msgDeadlineFormat, s.UpdateRevision)
	switch {
	case prev != nil && prev.Reason == string(kruiseappsv1alpha1.CloneSetProgressDeadlineExceeded) && prev.Message == timedOut:
		return *prev, 0
	case prev == nil || prev.Reason != string(kruiseappsv1alpha1.CloneSetProgressUpdated):
		return transition(prev, corev1.ConditionTrue, kruiseappsv1alpha1.CloneSetProgressUpdated, msgProgressing, now), deadline + time.Second
	}
	if left := prev.LastUpdateTime.Add(deadline).Sub(now); left >= 0 {
		return *prev, left + time.Second
	}
	return transition(prev, corev1.ConditionFalse, kruiseappsv1alpha1.CloneSetProgressDeadlineExceeded, timedOut, now), 0
}

// settledReason is the reason of a CloneSet that is not progressing: paused, complete, or at its partition.
func settledReason(cs *kruiseappsv1alpha1.CloneSet, s *kruiseappsv1alpha1.CloneSetStatus) (kruiseappsv1alpha1.CloneSetConditionReason, string, bool) {
	replicas := Resolve(cs).Replicas
	scaled := s.Replicas == replicas && s.AvailableReplicas >= replicas
	switch {
	case cs.Spec.UpdateStrategy.Paused:
		return kruiseappsv1alpha1.CloneSetProgressPaused, msgPaused, true
	case scaled && s.UpdatedAvailableReplicas >= replicas:
		return kruiseappsv1alpha1.CloneSetAvailable, msgAvailable, true
	case scaled && s.ExpectedUpdatedReplicas < replicas && s.UpdatedAvailableReplicas >= s.ExpectedUpdatedReplicas:
		return kruiseappsv1alpha1.CloneSetProgressPartitionAvailable, msgPartitionAvailable, true
	}
	return "", "", false
}

// transition returns the condition with a new reason; unchanged ones keep their times, and the transition
// time moves only with the status.
func transition(prev *kruiseappsv1alpha1.CloneSetCondition, status corev1.ConditionStatus,
	reason kruiseappsv1alpha1.CloneSetConditionReason, msg string, now time.Time) kruiseappsv1alpha1.CloneSetCondition {
	if prev != nil && prev.Status == status && prev.Reason == string(reason) && prev.Message == msg {
		return *prev
	}
	at := metav1.NewTime(now)
	c := kruiseappsv1alpha1.CloneSetCondition{Type: kruiseappsv1alpha1.CloneSetConditionTypeProgressing, Status: status,
		Reason: string(reason), Message: msg, LastUpdateTime: at, LastTransitionTime: at}
	if prev != nil && prev.Status == status {
		c.LastTransitionTime = prev.LastTransitionTime
	}
	return c
}
