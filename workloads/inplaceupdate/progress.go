package inplaceupdate

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// Progress is how far a pod's in-place update has come, as the workload controller refreshing its pods sees it.
type Progress struct {
	// Done: no in-place update is pending once Status is written.
	Done bool
	// Status is the status change that finishes the update (or initialises the readiness gates); nil if none.
	Status func(*corev1.Pod) bool
	// Started is when the update this pass completes began, for the duration metric; At is now.
	Started *time.Time
	At      time.Time
}

// Hooks are what Advance asks of the workload controller whose pod it looks at.
type Hooks struct {
	// Warn reports a pod whose in-place update state cannot be read (an event on the workload).
	Warn func(p *corev1.Pod, err error)
	// WakeIn asks for another look at the workload after d.
	WakeIn func(d time.Duration)
	// Resume writes the update a grace period deferred into the pod.
	Resume func(p *corev1.Pod, s *Spec) error
}

// Advance tells whether a pod has an in-place update pending, and which status change finishes it:
// InPlaceUpdateReady back to True once the kubelet runs every updated container. A pod whose gates were never
// initialised (its creation-time write failed, or another controller created it) gets them initialised; an
// update deferred by inPlaceUpdateStrategy.gracePeriodSeconds is resumed once its grace is over, and until
// then the pod is held and the workload looked at again when the grace ends.
func Advance(p *corev1.Pod, now time.Time, h Hooks) (Progress, error) {
	at := metav1.NewTime(now)
	switch {
	case Uninitialized(p) || podreadiness.NeedsCondition(p):
		return Progress{Done: true, Status: InitGates(at)}, nil
	case Ready(p):
		return Progress{Done: true}, nil
	}
	if held, err := resumeAfterGrace(p, now, h); held || err != nil {
		return Progress{}, err
	}
	done, err := Completed(p)
	if err != nil {
		h.Warn(p, err)
		return Progress{}, nil
	}
	if !done {
		return Progress{}, nil
	}
	prog := Progress{Done: true, At: now, Status: func(p *corev1.Pod) bool { return SetReady(p, true, at) }}
	if state, _ := kruiseappspub.ParseInPlaceUpdateState(p); state != nil {
		prog.Started = &state.UpdateTimestamp.Time
	}
	return prog, nil
}

// resumeAfterGrace resumes an update whose grace is over: the pod is held this pass either way.
func resumeAfterGrace(p *corev1.Pod, now time.Time, h Hooks) (held bool, err error) {
	spec, left, deferred, err := Deferred(p, now)
	switch {
	case err != nil:
		h.Warn(p, err)
		return true, nil
	case !deferred:
		return false, nil
	case left > 0:
		h.WakeIn(left)
		return true, nil
	}
	return true, h.Resume(p, spec)
}

// InitGates sets the conditions of the readiness gates a new pod carries: InPlaceUpdateReady when nobody has
// set it yet (never over an update in progress), and KruisePodReady.
func InitGates(at metav1.Time) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		set := Uninitialized(p) && SetReady(p, true, at)
		initialised := podreadiness.InitCondition(p, at)
		return set || initialised
	}
}
