package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPodState(t *testing.T) {
	for _, tc := range []struct {
		name string
		two  bool
		pod  *corev1.Pod
		want State
	}{
		{name: "not injected yet waits", pod: newPod("p", 1), want: Waiting},
		{name: "injected without a status waits", pod: newPod("p", 1, ours(nil)), want: Waiting},
		{name: "waiting", pod: newPod("p", 1, ours(waiting)), want: Waiting},
		{name: "running", pod: newPod("p", 1, ours(running)), want: Running},
		{name: "exit 0", pod: newPod("p", 1, ours(succeeded)), want: Succeeded},
		{name: "exit 1", pod: newPod("p", 1, ours(failed)), want: Failed},
		{name: "could not run", pod: newPod("p", 1, ours(runError)), want: Failed},
		{name: "terminated without a finish time", pod: newPod("p", 1, ours(noFinish)), want: Unknown},
		{name: "empty state", pod: newPod("p", 1, ours(&corev1.ContainerState{})), want: Unknown},
		{name: "another container's status is not the job's", pod: newPod("p", 1, withEC("other", "", failed)), want: Waiting},
		{name: "one failed fails the pod", two: true, pod: newPod("p", 1, ours(running), withEC("trace", jobUID, failed)), want: Failed},
		{name: "all exit 0", two: true, pod: newPod("p", 1, ours(succeeded), withEC("trace", jobUID, succeeded)), want: Succeeded},
		{name: "one done, one running", two: true, pod: newPod("p", 1, ours(succeeded), withEC("trace", jobUID, running)), want: Running},
		{name: "one done, one not started", two: true, pod: newPod("p", 1, ours(succeeded), withEC("trace", jobUID, nil)), want: Waiting},
		{name: "one done, one unknown", two: true, pod: newPod("p", 1, ours(succeeded), withEC("trace", jobUID, noFinish)), want: Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := newJob()
			if tc.two {
				job = newJob(twoContainers)
			}
			if got := PodState(job, tc.pod); got != tc.want {
				t.Errorf("state %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCount(t *testing.T) {
	pods := []*corev1.Pod{newPod("a", 1), newPod("b", 2, ours(waiting)), newPod("c", 3, ours(running)),
		newPod("d", 4, ours(succeeded)), newPod("e", 5, ours(succeeded)), newPod("f", 6, ours(failed)), newPod("g", 7, ours(noFinish))}
	want := Counts{Matches: 7, Waiting: 2, Running: 1, Succeeded: 2, Failed: 1}
	if got := Count(newJob(), pods); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
}
