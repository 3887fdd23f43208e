package inplaceupdate

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// Completed reports whether the kubelet has run every container an in-place update changed: each one
// reports an image ID other than the one recorded when the update started, or already runs the spec's
// image; and, when the update changed metadata that env vars read, each such container runs with the new
// values (envRestarted). A pod without the state annotation has nothing pending; one still in its grace
// period is not done.
// A malformed annotation is an error.
func Completed(pod *corev1.Pod) (bool, error) {
	if _, deferred := kruiseappspub.GetInPlaceUpdateGrace(pod); deferred {
		return false, nil
	}
	state, err := kruiseappspub.ParseInPlaceUpdateState(pod)
	if err != nil || state == nil {
		return state == nil && err == nil, err
	}
	return ContainersRestarted(pod, state.LastContainerStatuses) && (!state.UpdateEnvFromMetadata || envRestarted(pod)), nil
}

// ContainersRestarted reports whether every container in last (the statuses recorded when an in-place
// update started) runs its new image: it reports another image ID, or already the spec's image. Every
// module that updates containers in place judges completion by it.
func ContainersRestarted(pod *corev1.Pod, last map[string]kruiseappspub.InPlaceUpdateContainerStatus) bool {
	for name, status := range last {
		if !containerRestarted(pod, name, status.ImageID) {
			return false
		}
	}
	return true
}

func containerRestarted(pod *corev1.Pod, name, lastImageID string) bool {
	spec := specImage(pod, name)
	cs := podcondition.ContainerStatus(pod, name)
	return cs != nil && (cs.ImageID != lastImageID || (spec != "" && cs.Image == spec))
}

func specImage(pod *corev1.Pod, name string) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

// Ready reports whether the pod's InPlaceUpdateReady condition is True; a pod without it counts as ready.
func Ready(pod *corev1.Pod) bool {
	c := podcondition.Get(pod, kruiseappspub.InPlaceUpdateReady)
	return c == nil || c.Status == corev1.ConditionTrue
}

// Uninitialized reports whether a pod waits for an InPlaceUpdateReady condition nobody has set yet: pods
// are created with the gate, and the condition can only be written once the pod exists.
func Uninitialized(pod *corev1.Pod) bool {
	return HasGate(pod) && podcondition.Get(pod, kruiseappspub.InPlaceUpdateReady) == nil
}

// SetReady sets the InPlaceUpdateReady condition; going False also sets the pod's Ready condition False, so
// that endpoints drop the pod before its containers restart. It reports whether anything changed.
func SetReady(pod *corev1.Pod, ready bool, now metav1.Time) bool {
	status, reason := corev1.ConditionTrue, ""
	if !ready {
		status, reason = corev1.ConditionFalse, ReasonStarted
	}
	changed := podcondition.Set(pod, kruiseappspub.InPlaceUpdateReady, status, reason, now)
	if !ready {
		changed = podcondition.MarkNotReady(pod, "ReadinessGatesNotReady", "in-place update started", now) || changed
	}
	return changed
}
