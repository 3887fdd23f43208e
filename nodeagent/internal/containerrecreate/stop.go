package containerrecreate

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	// defaultGraceSeconds is the pod default when neither the request nor the pod says.
	defaultGraceSeconds = 30
	// minGraceSeconds is the kubelet's minimal shutdown window left after a preStop handler.
	minGraceSeconds = 2
)

// Event reasons, as the kubelet names them where it has one.
const (
	reasonKilling           = "Killing"
	reasonFailedKilling     = "FailedKilling"
	reasonFailedPreStopHook = "FailedPreStopHook"
	reasonCompleted         = "Completed"
)

// stop runs the container's preStop handler and then stops it through the runtime; the kubelet restarts it.
// The runtime's answer is returned as outcome, to be recorded on the request; err means the stop was not
// attempted (the pod could not be read or was replaced) and the step is retried.
func (r *Reconciler) stop(ctx context.Context, c *crr, s Stop) (outcome, err error) {
	pod, err := r.podOf(ctx, c)
	if err != nil {
		return nil, err
	}
	spec := &c.Spec.Containers[s.Index]
	grace := graceSeconds(c, pod)
	start := r.Clock.Now()
	if spec.PreStop != nil && grace > 0 {
		if err := r.runPreStop(ctx, spec, pod.Status.PodIP, s.ContainerID, time.Duration(grace)*time.Second); err != nil {
			// As for the kubelet, a failing preStop handler does not keep the container from stopping.
			r.Recorder.Eventf(c, pod, corev1.EventTypeWarning, reasonFailedPreStopHook, "PreStop",
				"PreStop handler of container %s failed: %v", s.Name, err)
		}
	}
	left := remainingGrace(grace, r.Clock.Since(start))
	outcome = r.Runtime.StopContainer(ctx, s.ContainerID, left)
	if outcome != nil {
		r.Recorder.Eventf(c, pod, corev1.EventTypeWarning, reasonFailedKilling, "StopContainer",
			"Stopping container %s failed: %v", s.Name, outcome)
	} else {
		r.Recorder.Eventf(c, pod, corev1.EventTypeNormal, reasonKilling, "StopContainer",
			"Stopped container %s (%s) with a grace period of %ds", s.Name, shortID(s.ContainerID), left)
	}
	return outcome, nil
}

// podOf reads the request's pod past the cache (the agent watches no pods) and checks it is the pod the
// request was made for.
func (r *Reconciler) podOf(ctx context.Context, c *crr) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: c.Spec.PodName}, pod); err != nil {
		return nil, fmt.Errorf("reading pod %s: %w", c.Spec.PodName, err)
	}
	if uid := c.Labels[kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey]; string(pod.UID) != uid {
		return nil, fmt.Errorf("pod %s was replaced (uid %s, the request is for %s)", pod.Name, pod.UID, uid)
	}
	return pod, nil
}

// graceSeconds is the request's termination grace period, else the pod's, else the pod default.
func graceSeconds(c *crr, pod *corev1.Pod) int64 {
	if g := strategyOf(c).TerminationGracePeriodSeconds; g != nil {
		return max(*g, 0)
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return max(*g, 0)
	}
	return defaultGraceSeconds
}

// remainingGrace is what is left of grace seconds after a preStop handler ran for elapsed. Zero stays zero
// (stop at once); otherwise the container keeps the kubelet's minimal window, or its whole grace if shorter.
func remainingGrace(grace int64, elapsed time.Duration) int64 {
	if grace <= 0 {
		return 0
	}
	return max(grace-int64(elapsed/time.Second), min(grace, minGraceSeconds))
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
