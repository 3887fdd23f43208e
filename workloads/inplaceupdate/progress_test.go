package inplaceupdate

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

var advanceStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// hookCalls records what Advance asked of the controller.
type hookCalls struct {
	warned  []error
	wake    time.Duration
	resumed *Spec
}

func (c *hookCalls) hooks() Hooks {
	return Hooks{
		Warn:   func(_ *corev1.Pod, err error) { c.warned = append(c.warned, err) },
		WakeIn: func(d time.Duration) { c.wake = d },
		Resume: func(_ *corev1.Pod, s *Spec) error { c.resumed = s; return nil },
	}
}

// updating is a running pod whose in-place update to app:2 has started (InPlaceUpdateReady False), deferred by
// grace seconds when grace > 0.
func updating(t *testing.T, grace int32) *corev1.Pod {
	t.Helper()
	pod := runningPod()
	podreadiness.AddGate(pod)
	now := metav1.NewTime(advanceStart)
	SetReady(pod, true, now)
	podreadiness.InitCondition(pod, now)
	spec, _ := Calculate(template("app:1", pod.Labels), template("app:2", pod.Labels))
	SetReady(pod, false, now)
	var err error
	if grace > 0 {
		err = Defer(pod, spec, "rev-2", now, grace)
	} else {
		err = Apply(pod, spec, "rev-2", now)
	}
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func inPlaceReady(p *corev1.Pod) corev1.ConditionStatus {
	if c := podcondition.Get(p, kruiseappspub.InPlaceUpdateReady); c != nil {
		return c.Status
	}
	return ""
}

func TestAdvance(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pod       func(t *testing.T) *corev1.Pod
		after     time.Duration
		done      bool
		readyThen corev1.ConditionStatus // InPlaceUpdateReady once Status is written ("" when Status is nil)
		wake      time.Duration
		resumed   bool
		warned    int
	}{
		{"new pod: both gates initialised", func(*testing.T) *corev1.Pod {
			p := runningPod()
			podreadiness.AddGate(p)
			return p
		}, 0, true, corev1.ConditionTrue, 0, false, 0},
		{"ready: nothing to do", func(t *testing.T) *corev1.Pod {
			p := updating(t, 0)
			SetReady(p, true, metav1.NewTime(advanceStart))
			return p
		}, 0, true, "", 0, false, 0},
		{"kubelet still on the old image: pending", func(t *testing.T) *corev1.Pod { return updating(t, 0) }, 0, false, "", 0, false, 0},
		{"kubelet runs the new image: ready again", func(t *testing.T) *corev1.Pod {
			p := updating(t, 0)
			p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "app", Image: "app:2", ImageID: "app@2"}
			return p
		}, time.Minute, true, corev1.ConditionTrue, 0, false, 0},
		{"a lost KruisePodReady during an update initialises it, not the update's end", func(t *testing.T) *corev1.Pod {
			p := updating(t, 0)
			p.Status.Conditions = slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == kruiseappspub.KruisePodReadyConditionType
			})
			return p
		}, 0, true, corev1.ConditionFalse, 0, false, 0},
		{"in its grace period: held, looked at again when it ends", func(t *testing.T) *corev1.Pod { return updating(t, 30) },
			10 * time.Second, false, "", 20 * time.Second, false, 0},
		{"grace over: resumed, held this pass", func(t *testing.T) *corev1.Pod { return updating(t, 30) },
			30 * time.Second, false, "", 0, true, 0},
		{"unreadable state: warned, held", func(t *testing.T) *corev1.Pod {
			p := updating(t, 0)
			p.Annotations[kruiseappspub.InPlaceUpdateStateKey] = "{"
			return p
		}, 0, false, "", 0, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, calls := tc.pod(t), &hookCalls{}
			prog, err := Advance(p, advanceStart.Add(tc.after), calls.hooks())
			if err != nil {
				t.Fatal(err)
			}
			if prog.Done != tc.done || calls.wake != tc.wake || (calls.resumed != nil) != tc.resumed || len(calls.warned) != tc.warned {
				t.Errorf("done %v, wake %v, resumed %v, warned %v", prog.Done, calls.wake, calls.resumed != nil, calls.warned)
			}
			got := corev1.ConditionStatus("")
			if prog.Status != nil {
				prog.Status(p)
				got = inPlaceReady(p)
				if podreadiness.NeedsCondition(p) {
					t.Error("KruisePodReady left without a condition")
				}
			}
			if got != tc.readyThen {
				t.Errorf("InPlaceUpdateReady %q once written, want %q", got, tc.readyThen)
			}
		})
	}
}

// A completed update reports when it began, for the duration metric.
func TestAdvanceReportsTheUpdateStart(t *testing.T) {
	p := updating(t, 0)
	p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "app", Image: "app:2", ImageID: "app@2"}
	prog, err := Advance(p, advanceStart.Add(time.Minute), (&hookCalls{}).hooks())
	if err != nil || prog.Started == nil || !prog.Started.Equal(advanceStart) || !prog.At.Equal(advanceStart.Add(time.Minute)) {
		t.Fatalf("started %v at %v: %v", prog.Started, prog.At, err)
	}
}

// A resume that fails is the controller's error to retry.
func TestAdvanceReturnsAFailedResume(t *testing.T) {
	h := (&hookCalls{}).hooks()
	h.Resume = func(*corev1.Pod, *Spec) error { return errors.New("conflict") }
	if _, err := Advance(updating(t, 30), advanceStart.Add(time.Minute), h); err == nil {
		t.Fatal("no error")
	}
}
