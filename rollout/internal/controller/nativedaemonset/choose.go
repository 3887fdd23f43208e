package nativedaemonset

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// choice is what picking the pods of a batch depends on.
type choice struct {
	// Pods are the DaemonSet's pods that are not being deleted.
	Pods []corev1.Pod
	// Replacing counts the pods deleted for the batch whose node does not run a pod of Revision yet: they
	// are on their way to the batch.
	Replacing int32
	// Revision is the controller-revision-hash the batch asks for.
	Revision string
	// Desired is the DaemonSet's desiredNumberScheduled, Partition the pods to keep on old revisions.
	Desired   int32
	Partition int32
	// MaxUnavailable bounds the unavailable pods, counting nodes that have none.
	MaxUnavailable  int32
	MinReadySeconds int32
	Now             time.Time
}

// choosePodsToDelete picks the old pods to delete so the DaemonSet controller recreates them on Revision,
// until Desired - Partition pods run it. Unavailable old pods go first and cost nothing; available ones are
// taken only while fewer than MaxUnavailable pods are unavailable. more reports that old pods are left that
// the batch still needs deleted once the budget allows.
func choosePodsToDelete(c choice) (doomed []corev1.Pod, more bool) {
	need := c.Desired - c.Partition - c.Replacing - int32(len(podsOf(c.Pods, c.Revision, true))) //nolint:gosec // pods on nodes fit
	if need <= 0 {
		return nil, false
	}
	budget := c.MaxUnavailable - unavailable(c)
	old := oldestUnavailableFirst(c)
	for _, p := range old {
		if int32(len(doomed)) == need { //nolint:gosec // bounded by need
			break
		}
		if available(&p, c.MinReadySeconds, c.Now) {
			if budget <= 0 {
				continue
			}
			budget--
		}
		doomed = append(doomed, p)
	}
	return doomed, int32(len(doomed)) < need && len(doomed) < len(old) //nolint:gosec // bounded by need
}

// unavailable counts the nodes without an available pod: missing pods plus pods not available.
func unavailable(c choice) int32 {
	n := max(c.Desired-int32(len(c.Pods)), 0) //nolint:gosec // pods on nodes fit
	for i := range c.Pods {
		if !available(&c.Pods[i], c.MinReadySeconds, c.Now) {
			n++
		}
	}
	return n
}

// oldestUnavailableFirst orders the old pods: unavailable first, then oldest, then by name for a stable
// order.
func oldestUnavailableFirst(c choice) []corev1.Pod {
	old := podsOf(c.Pods, c.Revision, false)
	slices.SortStableFunc(old, func(a, b corev1.Pod) int {
		aa, ba := available(&a, c.MinReadySeconds, c.Now), available(&b, c.MinReadySeconds, c.Now)
		if aa != ba {
			if aa {
				return 1
			}
			return -1
		}
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return cmp.Compare(a.Name, b.Name)
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return old
}

// podsOf returns the pods on revision (onRevision) or on any other revision.
func podsOf(pods []corev1.Pod, revision string, onRevision bool) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if (p.Labels[rolloutsv1beta1.ControllerRevisionHashLabelKey] == revision) == onRevision {
			out = append(out, p)
		}
	}
	return out
}

// available reports whether the pod has been ready for minReadySeconds.
func available(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodReady {
			continue
		}
		if c.Status != corev1.ConditionTrue {
			return false
		}
		return minReadySeconds <= 0 || !c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).After(now)
	}
	return false
}
