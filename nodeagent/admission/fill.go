package admission

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// FillFromPod copies into a request that passed ValidateCreate what the node agent needs from its pod, so
// that the agent never reads the pod: the pod-uid, node-name and active labels, the pod's termination grace
// period when the strategy sets none, and per container its preStop handler, its ports (which a named port
// of the handler refers to) and its current containerID and restartCount.
func FillFromPod(crr *kruiseappsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) {
	if crr == nil || pod == nil {
		return
	}
	if crr.Labels == nil {
		crr.Labels = map[string]string{}
	}
	crr.Labels[kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey] = string(pod.UID)
	crr.Labels[kruiseappsv1alpha1.ContainerRecreateRequestNodeNameKey] = pod.Spec.NodeName
	crr.Labels[kruiseappsv1alpha1.ContainerRecreateRequestActiveKey] = "true"
	Default(crr)
	if crr.Spec.Strategy.TerminationGracePeriodSeconds == nil && pod.Spec.TerminationGracePeriodSeconds != nil {
		crr.Spec.Strategy.TerminationGracePeriodSeconds = ptr.To(*pod.Spec.TerminationGracePeriodSeconds)
	}
	for i := range crr.Spec.Containers {
		fillContainer(&crr.Spec.Containers[i], pod)
	}
}

func fillContainer(c *kruiseappsv1alpha1.ContainerRecreateRequestContainer, pod *corev1.Pod) {
	if pc := podContainer(pod, c.Name); pc != nil {
		c.PreStop = preStop(pc.Lifecycle)
		c.Ports = slices.Clone(pc.Ports)
	}
	if st := podcondition.ContainerStatus(pod, c.Name); st != nil {
		c.StatusContext = &kruiseappsv1alpha1.ContainerRecreateRequestContainerContext{
			ContainerID: st.ContainerID, RestartCount: st.RestartCount,
		}
	}
}

// preStop keeps the handler kinds the node agent can run; a sleep-only hook has none of them.
func preStop(l *corev1.Lifecycle) *kruiseappsv1alpha1.ProbeHandler {
	if l == nil || l.PreStop == nil {
		return nil
	}
	h := l.PreStop
	if h.Exec == nil && h.HTTPGet == nil && h.TCPSocket == nil {
		return nil
	}
	out := &kruiseappsv1alpha1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}
	return out.DeepCopy()
}
