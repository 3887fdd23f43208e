package containerrecreate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/nodeagent/cri/critest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// statesOf is what a request's status says of its containers, or nil before it says anything.
func statesOf(c *crr) []containerState { return c.Status.ContainerRecreateStates }

func TestRecreatesAContainer(t *testing.T) {
	w := startAgent(t)
	succeeded := counted(t, resultSucceeded)
	hook := []string{"/bin/sh", "-c", "drain"}
	pod := w.runPod("web", w.node, 7, []string{"app", "sidecar"}, withPreStop(hook...))
	old := containerID(pod, "app")
	c := w.request("restart-app", pod, kruiseappsv1alpha1.ContainerRecreateRequestStrategy{}, "app")

	eventually(t, "the container stopped", func() bool { return len(w.stopsOf(old)) > 0 })
	if got := w.stopsOf(old); !cmp.Equal(got, []int64{7}) {
		t.Errorf("stops of the old container: grace %v, want the pod's [7]", got)
	}
	if diff := cmp.Diff([]critest.Exec{{ContainerID: old, Cmd: hook}}, w.rt.Execs()); diff != "" {
		t.Errorf("preStop execs (-want +got):\n%s", diff)
	}
	eventually(t, "the request recreating its container", func() bool {
		got := w.get(c)
		return got.Status.Phase == phaseRecreating && cmp.Equal(statesOf(got), []containerState{st("app", phaseRecreating, true)})
	})

	w.restart(pod, "app", c)
	eventually(t, "the request completed", func() bool { return w.get(c).Status.Phase == phaseCompleted })
	got := w.get(c)
	if diff := cmp.Diff([]containerState{st("app", phaseSucceeded, true)}, statesOf(got)); diff != "" {
		t.Errorf("container states (-want +got):\n%s", diff)
	}
	if got.Status.CompletionTime == nil || got.Status.Message != "" {
		t.Errorf("completion: time %v, message %q", got.Status.CompletionTime, got.Status.Message)
	}
	if sidecar := containerID(pod, "sidecar"); len(w.stopsOf(sidecar)) != 0 || !w.rt.Running(sidecar) {
		t.Error("the sidecar, not in the request, was stopped")
	}
	// The agent counts the container once its status write is back, which may be after the test reads it.
	eventually(t, RecreatesName+"{result=succeeded} grown by 1", func() bool { return counted(t, resultSucceeded)-succeeded >= 1 })
	if d := counted(t, resultSucceeded) - succeeded; d != 1 {
		t.Errorf("%s{result=succeeded} grew by %v, want 1", RecreatesName, d)
	}
	eventually(t, "events for the stop and the completion", func() bool {
		reasons := eventReasons(t, w, c)
		return reasons[reasonKilling] && reasons[reasonCompleted]
	})
}

func TestAFailingPreStopHandlerDoesNotPreventTheStop(t *testing.T) {
	w := startAgent(t)
	w.rt.OnExec(func(string, []string) (cri.ExecResult, error) {
		return cri.ExecResult{Stderr: []byte("draining failed"), ExitCode: 1}, nil
	})
	pod := w.runPod("web", w.node, 30, []string{"app"}, withPreStop("drain"))
	old := containerID(pod, "app")
	c := w.request("restart-app", pod, kruiseappsv1alpha1.ContainerRecreateRequestStrategy{TerminationGracePeriodSeconds: ptr.To[int64](4)}, "app")

	eventually(t, "the container stopped with the request's grace period", func() bool { return cmp.Equal(w.stopsOf(old), []int64{4}) })
	eventually(t, "a warning about the handler", func() bool { return eventReasons(t, w, c)[reasonFailedPreStopHook] })
}

// eventReasons are the reasons of the events regarding a request.
func eventReasons(t *testing.T, w *world, c *crr) map[string]bool {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := w.c.List(t.Context(), list, client.InNamespace(w.ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range list.Items {
		if e.Regarding.Name == c.Name && e.Regarding.Kind == "ContainerRecreateRequest" {
			out[e.Reason] = true
		}
	}
	return out
}

func TestOrderedRecreate(t *testing.T) {
	w := startAgent(t)
	pod := w.runPod("db", w.node, 30, []string{"a", "b"})
	a1, b1 := containerID(pod, "a"), containerID(pod, "b")
	c := w.request("restart-both", pod, kruiseappsv1alpha1.ContainerRecreateRequestStrategy{
		OrderedRecreate: true, TerminationGracePeriodSeconds: ptr.To[int64](3)}, "a", "b")

	eventually(t, "a stopped", func() bool { return cmp.Equal(w.stopsOf(a1), []int64{3}) })
	eventually(t, "a recreating", func() bool {
		return cmp.Equal(statesOf(w.get(c)), []containerState{st("a", phaseRecreating, true), st("b", phasePending, false)})
	})
	consistently(t, "b running while a is not back", func() bool { return len(w.stopsOf(b1)) == 0 && w.rt.Running(b1) })

	w.restart(pod, "a", c)
	eventually(t, "b stopped once a is back", func() bool { return cmp.Equal(w.stopsOf(b1), []int64{3}) })
	w.restart(pod, "b", c)
	eventually(t, "the request completed", func() bool { return w.get(c).Status.Phase == phaseCompleted })
	if diff := cmp.Diff([]containerState{st("a", phaseSucceeded, true), st("b", phaseSucceeded, true)}, statesOf(w.get(c))); diff != "" {
		t.Errorf("container states (-want +got):\n%s", diff)
	}
	if len(w.stopsOf(a1)) != 1 || len(w.rt.Stops()) != 2 {
		t.Errorf("stops = %+v, want one of a1 and one of b1", w.rt.Stops())
	}
}

func TestFailurePolicyFailEndsAtTheFirstFailedStop(t *testing.T) {
	w := startAgent(t)
	pod := w.runPod("web", w.node, 30, []string{"a", "b"})
	a1, b1 := containerID(pod, "a"), containerID(pod, "b")
	w.rt.FailStop(a1, errors.New("device or resource busy"))
	c := w.request("restart-both", pod, kruiseappsv1alpha1.ContainerRecreateRequestStrategy{}, "a", "b")

	eventually(t, "the request completed", func() bool { return w.get(c).Status.Phase == phaseCompleted })
	got := w.get(c)
	states := statesOf(got)
	if len(states) != 2 || states[0].Phase != phaseFailed || !strings.Contains(states[0].Message, "device or resource busy") ||
		states[1] != st("b", phasePending, false) {
		t.Errorf("container states = %+v, want a Failed with the runtime's error and b Pending", states)
	}
	if !strings.Contains(got.Status.Message, "container a failed") || got.Status.CompletionTime == nil {
		t.Errorf("completion: message %q, time %v", got.Status.Message, got.Status.CompletionTime)
	}
	consistently(t, "b never stopped", func() bool { return len(w.stopsOf(b1)) == 0 && w.rt.Running(b1) })
	if reasons := eventReasons(t, w, c); !reasons[reasonFailedKilling] {
		t.Errorf("event reasons = %v, want %s", reasons, reasonFailedKilling)
	}
}

func TestRequestsOfOtherNodesAreNeverTouched(t *testing.T) {
	w := startAgent(t)
	mine := w.runPod("mine", w.node, 30, []string{"app"})
	// The other node's pod even has its container in this runtime: only the request's node counts.
	theirs := w.runPod("theirs", "elsewhere", 30, []string{"app"})
	other := w.request("theirs", theirs, kruiseappsv1alpha1.ContainerRecreateRequestStrategy{}, "app")
	c := w.request("mine", mine, kruiseappsv1alpha1.ContainerRecreateRequestStrategy{}, "app")

	eventually(t, "this node's request acted on", func() bool { return len(w.stopsOf(containerID(mine, "app"))) == 1 })
	consistently(t, "the other node's request untouched", func() bool {
		got := w.get(other)
		return got.Status.Phase == "" && len(got.Status.ContainerRecreateStates) == 0 &&
			len(w.stopsOf(containerID(theirs, "app"))) == 0 && w.rt.Running(containerID(theirs, "app"))
	})
	if got := w.get(c); got.Status.Phase != phaseRecreating {
		t.Errorf("this node's request is %q, want Recreating", got.Status.Phase)
	}
}

func TestASecondRequestWaitsForTheFirst(t *testing.T) {
	w := startAgent(t)
	pod := w.runPod("web", w.node, 30, []string{"app"})
	a1 := containerID(pod, "app")
	first := w.request("first", pod, kruiseappsv1alpha1.ContainerRecreateRequestStrategy{}, "app")
	second := w.request("second", pod, kruiseappsv1alpha1.ContainerRecreateRequestStrategy{}, "app")

	eventually(t, "the first recreating and the second pending", func() bool {
		return w.get(first).Status.Phase == phaseRecreating && w.get(second).Status.Phase == phasePending && len(w.stopsOf(a1)) == 1
	})
	// The second request's synced statuses go first: synced after the first's, they could still name the old
	// container when the second starts, which then counts the container as one it killed.
	w.restart(pod, "app", second, first)
	eventually(t, "both completed", func() bool {
		return w.get(first).Status.Phase == phaseCompleted && w.get(second).Status.Phase == phaseCompleted
	})
	// The second request was made for the container the first one recreated: nothing left to stop.
	if len(w.rt.Stops()) != 1 {
		t.Errorf("stops = %+v, want only the first request's", w.rt.Stops())
	}
	if diff := cmp.Diff([]containerState{st("app", phaseSucceeded, false)}, statesOf(w.get(second))); diff != "" {
		t.Errorf("second request's states (-want +got):\n%s", diff)
	}
}
