package plan

import (
	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// State is where a target pod stands with the job's ephemeral containers, as upstream counts it.
type State int

const (
	// Waiting: a container of the job has not started yet (or is not in the pod yet).
	Waiting State = iota
	// Running: none failed, none waits, one runs.
	Running
	// Succeeded: every container of the job exited 0.
	Succeeded
	// Failed: a container of the job exited non-zero, or could not be run (RunContainerError).
	Failed
	// Unknown: none of the above, e.g. a terminated container without a finish time; not counted.
	Unknown
)

// reasonRunContainerError is the kubelet's waiting reason for a container it failed to start: upstream
// counts it as failed, since an ephemeral container is never restarted.
const reasonRunContainerError = "RunContainerError"

// PodState is the state of the job's containers in a target pod, from its ephemeralContainerStatuses: failed
// if one failed, succeeded if all succeeded, else running if one runs, else waiting if one waits (a container
// without a status waits).
func PodState(job *kruiseappsv1alpha1.EphemeralJob, pod *corev1.Pod) State {
	seen := map[State]int{}
	for _, tc := range job.Spec.Template.EphemeralContainers {
		seen[containerState(statusOf(pod, tc.Name))]++
	}
	switch n := len(job.Spec.Template.EphemeralContainers); {
	case n == 0:
		return Unknown
	case seen[Failed] > 0:
		return Failed
	case seen[Succeeded] == n:
		return Succeeded
	case seen[Running] > 0:
		return Running
	case seen[Waiting] > 0:
		return Waiting
	}
	return Unknown
}

func statusOf(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.EphemeralContainerStatuses {
		if s := &pod.Status.EphemeralContainerStatuses[i]; s.Name == name {
			return s
		}
	}
	return nil
}

// containerState maps one container's status as upstream does; no status yet is waiting.
func containerState(s *corev1.ContainerStatus) State {
	switch {
	case s == nil:
		return Waiting
	case s.State.Terminated != nil && s.State.Terminated.ExitCode != 0:
		return Failed
	case s.State.Terminated != nil && !s.State.Terminated.FinishedAt.IsZero():
		return Succeeded
	case s.State.Terminated != nil:
		return Unknown
	case s.State.Running != nil:
		return Running
	case s.State.Waiting != nil && s.State.Waiting.Reason == reasonRunContainerError:
		return Failed
	case s.State.Waiting != nil:
		return Waiting
	}
	return Unknown
}

// Counts are the status counters: targets by state.
type Counts struct {
	Matches, Waiting, Running, Succeeded, Failed int32
}

// Count tallies the targets' states.
func Count(job *kruiseappsv1alpha1.EphemeralJob, targets []*corev1.Pod) Counts {
	c := Counts{Matches: int32(len(targets))}
	for _, p := range targets {
		switch PodState(job, p) {
		case Waiting:
			c.Waiting++
		case Running:
			c.Running++
		case Succeeded:
			c.Succeeded++
		case Failed:
			c.Failed++
		case Unknown:
		}
	}
	return c
}
