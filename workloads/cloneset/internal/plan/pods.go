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

// Ready reports whether the pod's Ready condition is True, and since when.
func Ready(p *corev1.Pod) (bool, time.Time) {
	if c := podcondition.Get(p, corev1.PodReady); c != nil {
		return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
	}
	return false, time.Time{}
}

// Available reports whether a pod serves: Ready for minReadySeconds, in the Normal lifecycle state, not
// in an in-place update, not being deleted. When the pod is Ready but too recently, wait says how long
// until it becomes available.
func Available(p *corev1.Pod, minReadySeconds int32, now time.Time) (ok bool, wait time.Duration) {
	ready, since := Ready(p)
	if !ready || p.DeletionTimestamp != nil || !normal(p) || !inplaceupdate.Ready(p) {
		return false, 0
	}
	left := since.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	if minReadySeconds > 0 && left > 0 {
		return false, left
	}
	return true, 0
}

func normal(p *corev1.Pod) bool {
	s := kruiseappspub.LifecycleStateType(p.Labels[kruiseappspub.LifecycleStateKey])
	return s == "" || s == kruiseappspub.LifecycleStateNormal
}

func state(p *corev1.Pod) kruiseappspub.LifecycleStateType {
	return kruiseappspub.LifecycleStateType(p.Labels[kruiseappspub.LifecycleStateKey])
}

// Specified reports whether the pod is named for deletion: in scaleStrategy.podsToDelete or labelled
// apps.kruise.io/specified-delete.
func Specified(p *corev1.Pod, podsToDelete map[string]bool) bool {
	_, labelled := p.Labels[kruiseappsv1alpha1.SpecifiedDeleteKey]
	return labelled || podsToDelete[p.Name]
}

// Active filters out the pods already being deleted.
func Active(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func countRevision(pods []*corev1.Pod, revision string) int32 {
	var n int32
	for _, p := range pods {
		if Revision(p) == revision {
			n++
		}
	}
	return n
}
