package podprober

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func execProbe(period int32, cmd ...string) kruiseappsv1alpha1.ContainerProbeSpec {
	return kruiseappsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{PeriodSeconds: period,
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}}}
}

func testSpec() kruiseappsv1alpha1.NodePodProbeSpec {
	return kruiseappsv1alpha1.NodePodProbeSpec{PodProbes: []kruiseappsv1alpha1.PodProbe{
		{Name: "a", Namespace: "ns", UID: "u1", IP: "10.0.0.1", Probes: []kruiseappsv1alpha1.ContainerProbe{
			{Name: "m#idle", ContainerName: "app", Probe: execProbe(5, "idle")},
			{Name: "m#role", ContainerName: "app", Probe: execProbe(5, "role")},
		}},
		{Name: "b", Namespace: "ns", UID: "u2", IP: "10.0.0.2", Probes: []kruiseappsv1alpha1.ContainerProbe{
			{Name: "m#idle", ContainerName: "app", Probe: execProbe(5, "idle")},
		}},
	}}
}

func TestDiff(t *testing.T) {
	want := Targets(testSpec())
	running := map[Key]uint64{}
	for k, tg := range want {
		running[k] = tg.Fingerprint()
	}
	if stop, start := Diff(running, want); len(stop)+len(start) != 0 {
		t.Fatalf("nothing changed, yet Diff stops %v and starts %d", stop, len(start))
	}
	changed := testSpec()
	changed.PodProbes[0].Probes[1].Probe = execProbe(9, "role")
	changed.PodProbes = changed.PodProbes[:1]
	changed.PodProbes[0].Probes = append(changed.PodProbes[0].Probes,
		kruiseappsv1alpha1.ContainerProbe{Name: "n#ready", ContainerName: "app", Probe: execProbe(1, "ok")})
	stop, start := Diff(running, Targets(changed))
	wantStop := []Key{{"u1", "m#role"}, {"u2", "m#idle"}}
	if diff := cmp.Diff(wantStop, stop); diff != "" {
		t.Errorf("stopped (-want +got):\n%s", diff)
	}
	var started []Key
	for _, s := range start {
		started = append(started, s.Key)
	}
	if diff := cmp.Diff([]Key{{"u1", "m#role"}, {"u1", "n#ready"}}, started); diff != "" {
		t.Errorf("started (-want +got):\n%s", diff)
	}
}

func TestTally(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	pass, fail := Outcome{Passed: true, Message: "ok"}, Outcome{Message: "exit 1"}
	steps := []struct {
		o       Outcome
		changed bool
		state   kruiseappsv1alpha1.ProbeState
	}{
		{fail, false, ""}, // 1 of 3 failures: no state yet
		{pass, false, ""}, // 1 of 2 passes
		{pass, true, kruiseappsv1alpha1.ProbeSucceeded},  // 2 of 2: Succeeded
		{pass, false, kruiseappsv1alpha1.ProbeSucceeded}, // unchanged: nothing to write
		{fail, false, kruiseappsv1alpha1.ProbeSucceeded},
		{fail, false, kruiseappsv1alpha1.ProbeSucceeded},
		{fail, true, kruiseappsv1alpha1.ProbeFailed}, // 3 of 3 failures
		{pass, false, kruiseappsv1alpha1.ProbeFailed},
	}
	var tl Tally
	for i, s := range steps {
		now := t0.Add(time.Duration(i) * time.Second)
		if got := tl.Record(s.o, 2, 3, now); got != s.changed || tl.State != s.state {
			t.Fatalf("step %d: changed=%v state=%q, want %v %q", i, got, tl.State, s.changed, s.state)
		}
		if s.changed && (!tl.Since.Equal(now) || tl.Message != s.o.Message) {
			t.Fatalf("step %d: since %v message %q, want %v %q", i, tl.Since, tl.Message, now, s.o.Message)
		}
	}
}

func TestStatus(t *testing.T) {
	at := time.Unix(1e9, 0)
	tallies := map[Key]Tally{
		{"u1", "m#role"}: {State: kruiseappsv1alpha1.ProbeFailed, Message: "exit 1", Since: at},
		{"u1", "m#idle"}: {},                                         // no state yet: left out
		{"u2", "m#idle"}: {},                                         // a pod with no state: left out
		{"u9", "m#idle"}: {State: kruiseappsv1alpha1.ProbeSucceeded}, // gone from the spec
	}
	want := kruiseappsv1alpha1.NodePodProbeStatus{PodProbeStatuses: []kruiseappsv1alpha1.PodProbeStatus{{
		Name: "a", Namespace: "ns", UID: "u1", ProbeStates: []kruiseappsv1alpha1.ContainerProbeState{{
			Name: "m#role", State: kruiseappsv1alpha1.ProbeFailed, Message: "exit 1",
			LastProbeTime: metav1.NewTime(at), LastTransitionTime: metav1.NewTime(at),
		}},
	}}}
	if diff := cmp.Diff(want, Status(testSpec(), tallies)); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func TestScheduleOf(t *testing.T) {
	if got, want := ScheduleOf(corev1.Probe{}), (Schedule{Period: 10 * time.Second, Timeout: time.Second, Success: 1, Failure: 3}); got != want {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
	p := corev1.Probe{InitialDelaySeconds: 4, PeriodSeconds: 2, TimeoutSeconds: 3, SuccessThreshold: 2, FailureThreshold: 1}
	want := Schedule{InitialDelay: 4 * time.Second, Period: 2 * time.Second, Timeout: 3 * time.Second, Success: 2, Failure: 1}
	if got := ScheduleOf(p); got != want {
		t.Errorf("ScheduleOf = %+v, want %+v", got, want)
	}
}
