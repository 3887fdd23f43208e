// Package crrmanager is the manager side of ContainerRecreateRequests: while the node agent recreates the
// containers, it keeps the pod's container statuses on the request (so the agent never watches pods),
// holds the pod not ready for the unready grace period, and completes requests the agent cannot finish
// (pod gone or replaced, deadline passed, no agent answering); once a request is finished it releases the
// pod, drops the active label the agents select on and deletes the request after its TTL.
//
// Decide is the pure plan; the Reconciler gathers the request and its pod and applies the plan once.
package crrmanager

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// ResponseTimeout is how long a new request may wait for a node agent to give it a phase.
const ResponseTimeout = time.Minute

// NotReadyUserAgent is the userAgent of the request's holder on the pod's KruisePodReady condition
// (upstream's); the key is HolderKey.
const NotReadyUserAgent = "ContainerRecreateRequest"

// Event reasons of the completions the manager decides.
const (
	ReasonPodGone          = "PodGone"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonNoNodeAgent      = "NodeAgentNotResponding"
)

// Completion finishes an unfinished request: phase Completed, completionTime and Message.
type Completion struct {
	Reason, Message string
	// FailUnfinished marks the containers not yet Succeeded or Failed as Failed, with Message.
	FailUnfinished bool
}

// Plan is what one reconcile changes, applied in this order: Complete alone; else the request's metadata
// (SyncStatuses, AddFinalizer), the pod (Hold or Release), the request's metadata again (AcquiredAt,
// RemoveFinalizer, RemoveActive), Delete. The finalizer is added before the pod is held and removed after
// it is released, so that a held pod always has a request to release it.
type Plan struct {
	Complete *Completion
	// SyncStatuses is the new sync-container-statuses annotation; nil leaves it.
	SyncStatuses *string
	// AddFinalizer and RemoveFinalizer change the unready-acquired finalizer.
	AddFinalizer, RemoveFinalizer bool
	// Hold adds the request's KruisePodReady holder to the pod, Release removes it.
	Hold, Release bool
	// AcquiredAt is the unready-acquired annotation to write; "" writes none.
	AcquiredAt string
	// RemoveActive drops the active label.
	RemoveActive bool
	// Delete removes the request: its TTL after completion has passed.
	Delete bool
	// RequeueAfter is when a time limit of the request falls due; 0 when none does.
	RequeueAfter time.Duration
}

// HolderKey is the request's key on the pod's KruisePodReady condition (upstream's: namespace/name).
func HolderKey(crr *kruiseappsv1alpha1.ContainerRecreateRequest) string {
	return crr.Namespace + "/" + crr.Name
}

// Decide plans one reconcile of crr; pod is the pod named spec.podName, nil when there is none.
func Decide(crr *kruiseappsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, now time.Time) Plan {
	if crr == nil {
		return Plan{}
	}
	if Finished(crr) || crr.DeletionTimestamp != nil {
		return decideFinished(crr, pod, now)
	}
	if c := completion(crr, pod, now); c != nil {
		return Plan{Complete: c}
	}
	p := Plan{RequeueAfter: nextLimit(crr, now)}
	if crr.Status.Phase != kruiseappsv1alpha1.ContainerRecreateRequestRecreating {
		return p // the node agent reads both only while it recreates
	}
	p.SyncStatuses = changedSyncStatuses(crr, pod)
	acquire(&p, crr, pod, now)
	return p
}

// Finished reports whether the request needs no more work from the node agent.
func Finished(crr *kruiseappsv1alpha1.ContainerRecreateRequest) bool {
	switch crr.Status.Phase {
	case kruiseappsv1alpha1.ContainerRecreateRequestCompleted, kruiseappsv1alpha1.ContainerRecreateRequestFailed:
		return true
	}
	return crr.Status.CompletionTime != nil
}

// HasFinalizer reports whether the request holds (or held) its pod not ready.
func HasFinalizer(crr *kruiseappsv1alpha1.ContainerRecreateRequest) bool {
	return slices.Contains(crr.Finalizers, kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey)
}

// decideFinished releases the pod, drops the active label and deletes the request after its TTL; a
// request being deleted only releases.
func decideFinished(crr *kruiseappsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, now time.Time) Plan {
	p := Plan{
		Release:         holds(pod, crr) && pod.DeletionTimestamp == nil,
		RemoveFinalizer: HasFinalizer(crr),
	}
	if crr.DeletionTimestamp != nil {
		return p
	}
	_, p.RemoveActive = crr.Labels[kruiseappsv1alpha1.ContainerRecreateRequestActiveKey]
	ttl, done := crr.Spec.TTLSecondsAfterFinished, crr.Status.CompletionTime
	if ttl == nil || done == nil {
		return p
	}
	left := time.Duration(max(*ttl, 0))*time.Second - now.Sub(done.Time)
	if left <= 0 {
		p.Delete, p.RemoveActive = true, false // the label goes with the request
	} else {
		p.RequeueAfter = left
	}
	return p
}

// holds reports whether the pod carries the request's KruisePodReady holder.
func holds(pod *corev1.Pod, crr *kruiseappsv1alpha1.ContainerRecreateRequest) bool {
	if pod == nil {
		return false
	}
	holders, err := podreadiness.Holders(pod)
	return err == nil && slices.Contains(holders, podreadiness.Holder{UserAgent: NotReadyUserAgent, Key: HolderKey(crr)})
}

// completion says why an unfinished request must be completed now, nil if it need not: its pod is gone or
// was replaced, no node agent answered in time, or its deadline passed.
func completion(crr *kruiseappsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, now time.Time) *Completion {
	if msg := podGone(crr, pod); msg != "" {
		return &Completion{Reason: ReasonPodGone, Message: msg}
	}
	if crr.Status.Phase == "" && left(crr, ResponseTimeout, now) <= 0 {
		msg := fmt.Sprintf("no node agent answered within %s: is the node agent running on node %q?",
			ResponseTimeout, crr.Labels[kruiseappsv1alpha1.ContainerRecreateRequestNodeNameKey])
		return &Completion{Reason: ReasonNoNodeAgent, Message: msg}
	}
	if d := crr.Spec.ActiveDeadlineSeconds; d != nil && left(crr, time.Duration(*d)*time.Second, now) <= 0 {
		msg := fmt.Sprintf("recreating has exceeded the activeDeadlineSeconds (%ds)", *d)
		return &Completion{Reason: ReasonDeadlineExceeded, Message: msg, FailUnfinished: true}
	}
	return nil
}

func podGone(crr *kruiseappsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) string {
	switch uid := crr.Labels[kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey]; {
	case pod == nil:
		return fmt.Sprintf("pod %q has gone", crr.Spec.PodName)
	case pod.DeletionTimestamp != nil:
		return fmt.Sprintf("pod %q is being deleted", crr.Spec.PodName)
	case string(pod.UID) != uid:
		return fmt.Sprintf("pod %q has gone: the pod of that name now has UID %s, not %q", crr.Spec.PodName, pod.UID, uid)
	}
	return ""
}

// left is what remains of limit since the request's creation.
func left(crr *kruiseappsv1alpha1.ContainerRecreateRequest, limit time.Duration, now time.Time) time.Duration {
	return limit - now.Sub(crr.CreationTimestamp.Time)
}

// nextLimit is when the response timeout or the deadline of an unfinished request falls due, 0 if never.
func nextLimit(crr *kruiseappsv1alpha1.ContainerRecreateRequest, now time.Time) time.Duration {
	var next time.Duration
	earliest := func(d time.Duration) {
		if next == 0 || d < next {
			next = d
		}
	}
	if crr.Status.Phase == "" {
		earliest(left(crr, ResponseTimeout, now))
	}
	if d := crr.Spec.ActiveDeadlineSeconds; d != nil {
		earliest(left(crr, time.Duration(*d)*time.Second, now))
	}
	return next
}

// acquire plans holding the pod not ready once, when the strategy asks for an unready grace period. A pod
// without the KruisePodReady gate cannot be held: the annotation alone lets the node agent go on, as
// upstream does.
func acquire(p *Plan, crr *kruiseappsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, now time.Time) {
	s := crr.Spec.Strategy
	if s == nil || s.UnreadyGracePeriodSeconds == nil || crr.Annotations[kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey] != "" {
		return
	}
	p.Hold = podreadiness.HasGate(pod)
	p.AddFinalizer = p.Hold && !HasFinalizer(crr)
	p.AcquiredAt = now.UTC().Format(time.RFC3339)
}
