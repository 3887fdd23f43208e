package launchpriority

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// Step is what the controller does next for a pod.
type Step struct {
	// Open is the priority whose key to add to the barrier (creating the barrier if it has none yet).
	Open *int
	// Containers are the containers Open releases, by name.
	Containers []string
	// Complete marks the pod's launch as completed: every priority it waits on is open.
	Complete bool
}

// Completed tells whether the pod carries the annotation that its launch is completed.
func Completed(pod *corev1.Pod) bool {
	return pod.Annotations[kruiseappspub.ContainerLaunchPriorityCompletedKey] == "true"
}

// Next is the step for pod given the keys of its barrier (nil: no barrier yet). The highest priority among
// the containers that are not ready opens: the containers of a higher priority are all ready then. Upstream
// counts a container by its ready status: one without a readiness probe is ready once it runs. The pod is
// complete once the lowest such priority is open, and when every prioritised container is ready.
func Next(pod *corev1.Pod, keys map[string]string) Step {
	waiting := waitingPriorities(pod)
	if len(waiting) == 0 {
		return Step{Complete: true}
	}
	lowest, highest := waiting[0], waiting[len(waiting)-1]
	if _, open := keys[Key(lowest)]; open {
		return Step{Complete: true}
	}
	var s Step
	if _, open := keys[Key(highest)]; !open {
		s.Open, s.Containers = &highest, containersOf(pod, highest)
	}
	s.Complete = lowest == highest
	return s
}

// waitingPriorities are the priorities of the pod's prioritised containers that are not ready, ascending.
func waitingPriorities(pod *corev1.Pod) []int {
	ready := map[string]bool{}
	for _, s := range pod.Status.ContainerStatuses {
		ready[s.Name] = s.Ready
	}
	var out []int
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if p, ok := Priority(c); ok && !ready[c.Name] {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func containersOf(pod *corev1.Pod, p int) []string {
	var out []string
	for i := range pod.Spec.Containers {
		if q, ok := Priority(&pod.Spec.Containers[i]); ok && q == p {
			out = append(out, pod.Spec.Containers[i].Name)
		}
	}
	return out
}
