package plan

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// RevisionLabel is the pod label naming the revision a pod runs (the standard controller-revision-hash).
const RevisionLabel = appsv1.ControllerRevisionHashLabelKey

// Revision is the revision a pod runs.
func Revision(p *corev1.Pod) string { return p.Labels[RevisionLabel] }

// Terminating reports whether the pod is being deleted.
func Terminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }

// Finished reports whether the pod's containers have stopped for good (Failed or Succeeded): a StatefulSet
// pod must always run, so such a pod is replaced.
func Finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// RunningAndReady reports whether the pod runs and its Ready condition is True.
func RunningAndReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && podcondition.IsReady(p)
}

// Normal reports whether the pod's lifecycle state lets it serve: Normal, or no state at all.
func Normal(p *corev1.Pod) bool {
	s := kruiseappspub.LifecycleStateType(p.Labels[kruiseappspub.LifecycleStateKey])
	return s == "" || s == kruiseappspub.LifecycleStateNormal
}

// Healthy reports whether the pod serves: Normal, running, Ready and not being deleted.
func Healthy(p *corev1.Pod) bool { return Normal(p) && RunningAndReady(p) && !Terminating(p) }

// Available reports whether a Normal, running pod has been Ready for minReadySeconds; when it is Ready but
// too recently, wait says how long until it is available.
func Available(p *corev1.Pod, minReadySeconds int32, now time.Time) (ok bool, wait time.Duration) {
	if !Normal(p) || !RunningAndReady(p) {
		return false, 0
	}
	if minReadySeconds <= 0 {
		return true, 0
	}
	need := time.Duration(minReadySeconds) * time.Second
	since := podcondition.Get(p, corev1.PodReady).LastTransitionTime
	if since.IsZero() {
		return false, need
	}
	if left := since.Add(need).Sub(now); left > 0 {
		return false, left
	}
	return true, 0
}

// Updating reports whether an in-place update of the pod has not finished: it is still in its grace period,
// its containers have not all restarted, or its InPlaceUpdateReady condition is not back to True.
func Updating(p *corev1.Pod) bool {
	done, err := inplaceupdate.Completed(p)
	return err != nil || !done || !inplaceupdate.Ready(p)
}

// Specified reports whether the pod is labelled apps.kruise.io/specified-delete: to be deleted (and
// recreated) whatever its revision, within maxUnavailable.
func Specified(p *corev1.Pod) bool {
	_, ok := p.Labels[kruiseappsv1alpha1.SpecifiedDeleteKey]
	return ok
}
