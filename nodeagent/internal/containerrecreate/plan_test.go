package containerrecreate

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// t0 is when the test requests are created; "now" in the tests is later.
var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// request is a running request for containers a and b (ids "a1", "b1", no restarts yet) created at t0.
func request(mutate ...func(*crr)) *crr {
	c := &crr{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", CreationTimestamp: metav1.NewTime(t0),
			Labels: map[string]string{kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey: "uid"}},
		Spec: kruiseappsv1alpha1.ContainerRecreateRequestSpec{PodName: "p", Containers: []kruiseappsv1alpha1.ContainerRecreateRequestContainer{
			{Name: "a", StatusContext: &kruiseappsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://a1"}},
			{Name: "b", StatusContext: &kruiseappsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://b1"}},
		}, Strategy: &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyFail}},
		Status: crrStatus{Phase: phaseRecreating},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func ordered(c *crr) { c.Spec.Strategy.OrderedRecreate = true }
func force(c *crr)   { c.Spec.Strategy.ForceRecreate = true }
func ignore(c *crr) {
	c.Spec.Strategy.FailurePolicy = kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore
}
func minStarted(s int32) func(*crr) { return func(c *crr) { c.Spec.Strategy.MinStartedSeconds = s } }

func states(s ...containerState) func(*crr) {
	return func(c *crr) { c.Status.ContainerRecreateStates = s }
}

// synced writes the manager's annotation: name=id pairs, all ready unless the id ends in "?".
func synced(pairs ...string) func(*crr) {
	return func(c *crr) {
		var list []syncStatus
		for i := 0; i+1 < len(pairs); i += 2 {
			id := pairs[i+1]
			ready := id[len(id)-1] != '?'
			if !ready {
				id = id[:len(id)-1]
			}
			list = append(list, syncStatus{Name: pairs[i], Ready: ready, ContainerID: "containerd://" + id})
		}
		raw, _ := json.Marshal(list)
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey] = string(raw)
	}
}

// running is a running container started at started with restarts restarts.
func running(id string, restarts int, started time.Time) cri.ContainerStatus {
	return cri.ContainerStatus{Container: cri.Container{ID: id, State: cri.StateRunning,
		Annotations: map[string]string{cri.AnnotationRestartCount: strconv.Itoa(restarts)}}, StartedAt: started}
}

func exited(id string) cri.ContainerStatus {
	s := running(id, 0, t0.Add(-time.Hour))
	s.State = cri.StateExited
	return s
}

// originals are a1 and b1, running since before the request.
func originals() map[string]cri.ContainerStatus {
	return map[string]cri.ContainerStatus{"a": running("a1", 0, t0.Add(-time.Hour)), "b": running("b1", 0, t0.Add(-time.Hour))}
}

func with(m map[string]cri.ContainerStatus, name string, s cri.ContainerStatus) map[string]cri.ContainerStatus {
	m[name] = s
	return m
}

func st(name string, phase kruiseappsv1alpha1.ContainerRecreateRequestPhase, killed bool) containerState {
	return containerState{Name: name, Phase: phase, IsKilled: killed}
}

func TestPlanRecreate(t *testing.T) {
	now := t0.Add(time.Minute)
	done := ptr.To(metav1.NewTime(now))
	cases := []struct {
		name       string
		crr        *crr
		containers map[string]cri.ContainerStatus
		wantStop   string
		want       crrStatus
		wantWait   time.Duration
	}{{
		name: "first container is stopped first", crr: request(), containers: originals(), wantStop: "a1",
		want: crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{st("a", phasePending, false), st("b", phasePending, false)}},
	}, {
		name: "unordered: the next one is stopped while the first restarts", crr: request(states(st("a", phaseRecreating, true))),
		containers: with(originals(), "a", exited("a1")), wantStop: "b1",
		want: crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{st("a", phaseRecreating, true), st("b", phasePending, false)}},
	}, {
		name: "ordered: the next one waits while the first restarts", crr: request(ordered, states(st("a", phaseRecreating, true))),
		containers: with(originals(), "a", running("a2", 1, now)),
		want:       crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{st("a", phaseRecreating, true), st("b", phasePending, false)}},
	}, {
		name: "ordered: the next one is stopped once the first is ready again", crr: request(ordered, states(st("a", phaseRecreating, true)), synced("a", "a2", "b", "b1")),
		containers: with(originals(), "a", running("a2", 1, now)), wantStop: "b1",
		want: crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{st("a", phaseSucceeded, true), st("b", phasePending, false)}},
	}, {
		name: "the synced status of the old container does not count", crr: request(states(st("a", phaseRecreating, true), st("b", phaseSucceeded, true)), synced("a", "a1", "b", "b2")),
		containers: with(originals(), "a", running("a2", 1, now)),
		want:       crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{st("a", phaseRecreating, true), st("b", phaseSucceeded, true)}},
	}, {
		name: "a new container not ready yet keeps recreating", crr: request(states(st("a", phaseRecreating, true), st("b", phaseSucceeded, true)), synced("a", "a2?")),
		containers: with(originals(), "a", running("a2", 1, now)),
		want:       crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{st("a", phaseRecreating, true), st("b", phaseSucceeded, true)}},
	}, {
		name: "already recreated containers complete the request without a stop", crr: request(synced("a", "a2", "b", "b1")),
		containers: with(with(originals(), "a", running("a2", 0, now)), "b", running("b1", 1, t0.Add(-time.Hour))),
		want: crrStatus{Phase: phaseCompleted, CompletionTime: done,
			ContainerRecreateStates: []containerState{st("a", phaseSucceeded, false), st("b", phaseSucceeded, false)}},
	}, {
		name: "a container started in the request's second is the original", crr: request(),
		containers: with(originals(), "a", running("a1", 0, t0.Add(800*time.Millisecond))), wantStop: "a1",
		want: crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{st("a", phasePending, false), st("b", phasePending, false)}},
	}, {
		name: "minStartedSeconds: a ready container that ran too briefly waits", crr: request(minStarted(10), states(st("a", phaseRecreating, true), st("b", phaseSucceeded, true)), synced("a", "a2")),
		containers: with(originals(), "a", running("a2", 1, now.Add(-3*time.Second))), wantWait: 7 * time.Second,
		want: crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{st("a", phaseRecreating, true), st("b", phaseSucceeded, true)}},
	}, {
		name: "minStartedSeconds: a ready container that ran long enough succeeds", crr: request(minStarted(10), states(st("a", phaseRecreating, true), st("b", phaseSucceeded, true)), synced("a", "a2")),
		containers: with(originals(), "a", running("a2", 1, now.Add(-10*time.Second))),
		want: crrStatus{Phase: phaseCompleted, CompletionTime: done,
			ContainerRecreateStates: []containerState{st("a", phaseSucceeded, true), st("b", phaseSucceeded, true)}},
	}, {
		name: "force: a container restarted on its own is stopped anyway", crr: request(force, synced("a", "a2")),
		containers: with(originals(), "a", running("a2", 1, now)), wantStop: "a2",
		want: crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{st("a", phasePending, false), st("b", phasePending, false)}},
	}, {
		name: "force: once stopped, the new container counts", crr: request(force, states(st("a", phaseRecreating, true)), synced("a", "a2")),
		containers: with(originals(), "a", running("a2", 1, now)), wantStop: "b1",
		want: crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{st("a", phaseSucceeded, true), st("b", phasePending, false)}},
	}, {
		name: "failurePolicy Fail: a failed container completes the request", crr: request(states(containerState{Name: "a", Phase: phaseFailed, Message: "boom"})),
		containers: originals(),
		want: crrStatus{Phase: phaseCompleted, CompletionTime: done, Message: "container a failed: boom",
			ContainerRecreateStates: []containerState{{Name: "a", Phase: phaseFailed, Message: "boom"}, st("b", phasePending, false)}},
	}, {
		name: "failurePolicy Ignore: the next container goes on", crr: request(ignore, states(containerState{Name: "a", Phase: phaseFailed, Message: "boom"})),
		containers: originals(), wantStop: "b1",
		want: crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{{Name: "a", Phase: phaseFailed, Message: "boom"}, st("b", phasePending, false)}},
	}, {
		name: "failurePolicy Ignore: completes with the failures named", crr: request(ignore, states(containerState{Name: "a", Phase: phaseFailed, Message: "boom"}, st("b", phaseSucceeded, true))),
		containers: originals(),
		want: crrStatus{Phase: phaseCompleted, CompletionTime: done, Message: "failed containers (ignored): a",
			ContainerRecreateStates: []containerState{{Name: "a", Phase: phaseFailed, Message: "boom"}, st("b", phaseSucceeded, true)}},
	}, {
		name: "a container missing on the node waits", crr: request(), containers: map[string]cri.ContainerStatus{"b": running("b1", 0, t0)},
		want: crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{
			{Name: "a", Phase: phasePending, Message: "container not found on the node"}, st("b", phasePending, false)}},
	}, {
		name: "no status context: only a later start counts", crr: request(func(c *crr) { c.Spec.Containers[0].StatusContext = nil }, synced("a", "a9")),
		containers: with(originals(), "a", running("a9", 0, now)), wantStop: "b1",
		want: crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{st("a", phaseSucceeded, false), st("b", phasePending, false)}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanRecreate(Input{CRR: tc.crr, Containers: tc.containers, Now: now})
			stop := ""
			if p.Stop != nil {
				stop = p.Stop.ContainerID
			}
			if stop != tc.wantStop {
				t.Errorf("stop = %q, want %q", stop, tc.wantStop)
			}
			if diff := cmp.Diff(tc.want, p.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if p.Wait != tc.wantWait {
				t.Errorf("wait = %v, want %v", p.Wait, tc.wantWait)
			}
		})
	}
}

func TestStopped(t *testing.T) {
	now := t0.Add(time.Minute)
	done := ptr.To(metav1.NewTime(now))
	cases := []struct {
		name string
		crr  *crr
		err  error
		want crrStatus
	}{{
		name: "a stopped container is recreating", crr: request(),
		want: crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{st("a", phaseRecreating, true), st("b", phasePending, false)}},
	}, {
		name: "failurePolicy Fail: a failed stop completes the request", crr: request(), err: errors.New("busy"),
		want: crrStatus{Phase: phaseCompleted, CompletionTime: done, Message: "container a failed: stopping the container failed: busy",
			ContainerRecreateStates: []containerState{{Name: "a", Phase: phaseFailed, Message: "stopping the container failed: busy"}, st("b", phasePending, false)}},
	}, {
		name: "failurePolicy Ignore: a failed stop leaves the rest to do", crr: request(ignore), err: errors.New("busy"),
		want: crrStatus{Phase: phaseRecreating, ContainerRecreateStates: []containerState{
			{Name: "a", Phase: phaseFailed, Message: "stopping the container failed: busy"}, st("b", phasePending, false)}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanRecreate(Input{CRR: tc.crr, Containers: originals(), Now: now})
			if p.Stop == nil || p.Stop.Name != "a" {
				t.Fatalf("planned stop = %+v, want container a", p.Stop)
			}
			p.Stopped(tc.crr, tc.err, now)
			if diff := cmp.Diff(tc.want, p.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPick(t *testing.T) {
	at := func(name string, created int, phase kruiseappsv1alpha1.ContainerRecreateRequestPhase) *crr {
		return &crr{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(created) * time.Second))},
			Status: crrStatus{Phase: phase}}
	}
	finished := at("finished", 0, phaseCompleted)
	finished.Status.CompletionTime = ptr.To(metav1.NewTime(t0))
	deleting := at("deleting", 0, "")
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	cases := []struct {
		name        string
		crrs        []*crr
		run         string
		wantPending []string
	}{
		{name: "none", crrs: nil},
		{name: "the oldest runs, the others wait", crrs: []*crr{at("new", 2, ""), at("old", 1, "")}, run: "old", wantPending: []string{"new"}},
		{name: "a recreating request keeps the pod", crrs: []*crr{at("old", 1, ""), at("running", 5, phaseRecreating)}, run: "running", wantPending: []string{"old"}},
		{name: "a pending request runs next and the others are not rewritten",
			crrs: []*crr{at("newer", 3, ""), at("waiting", 2, phasePending), at("later", 4, phasePending)}, run: "waiting", wantPending: []string{"newer"}},
		{name: "finished and deleted requests take no part", crrs: []*crr{finished, deleting, at("x", 9, "")}, run: "x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run, pending := Pick(tc.crrs)
			got := ""
			if run != nil {
				got = run.Name
			}
			var names []string
			for _, p := range pending {
				names = append(names, p.Name)
			}
			if got != tc.run || !cmp.Equal(names, tc.wantPending) {
				t.Errorf("Pick = %q, pending %v; want %q, pending %v", got, names, tc.run, tc.wantPending)
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	now := t0.Add(time.Minute)
	unready := func(grace int64, ann string) func(*crr) {
		return func(c *crr) {
			c.Spec.Strategy.UnreadyGracePeriodSeconds = &grace
			if ann != "" {
				c.Annotations = map[string]string{kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: ann}
			}
		}
	}
	phase := func(p kruiseappsv1alpha1.ContainerRecreateRequestPhase) func(*crr) {
		return func(c *crr) { c.Status.Phase = p }
	}
	cases := []struct {
		name      string
		crr       *crr
		ready     bool
		wantPhase kruiseappsv1alpha1.ContainerRecreateRequestPhase // of the status to write; "" for none
		wantWait  time.Duration
	}{
		{name: "a new request starts recreating", crr: request(phase("")), wantPhase: phaseRecreating},
		{name: "a pending request starts recreating", crr: request(phase(phasePending)), wantPhase: phaseRecreating},
		{name: "no unready grace: ready", crr: request(), ready: true},
		{name: "unready grace: waits for the manager's annotation", crr: request(unready(5, ""))},
		{name: "unready grace: waits out the grace", crr: request(unready(5, now.Add(-2*time.Second).Format(time.RFC3339))), wantWait: 3 * time.Second},
		{name: "unready grace: ready once passed", crr: request(unready(5, now.Add(-5*time.Second).Format(time.RFC3339))), ready: true},
		{name: "unready grace: an unreadable time completes the request", crr: request(unready(5, "yesterday")), wantPhase: phaseCompleted},
		{name: "no pod uid label completes the request", crr: request(func(c *crr) { c.Labels = nil }), wantPhase: phaseCompleted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := Admit(tc.crr, now)
			var phase kruiseappsv1alpha1.ContainerRecreateRequestPhase
			if a.Status != nil {
				phase = a.Status.Phase
			}
			if a.Ready != tc.ready || phase != tc.wantPhase || a.Wait != tc.wantWait {
				t.Errorf("Admit = ready %v, status phase %q, wait %v; want %v, %q, %v", a.Ready, phase, a.Wait, tc.ready, tc.wantPhase, tc.wantWait)
			}
			if phase == phaseCompleted && (a.Status.Message == "" || a.Status.CompletionTime == nil) {
				t.Errorf("completed without message or time: %+v", a.Status)
			}
		})
	}
}
