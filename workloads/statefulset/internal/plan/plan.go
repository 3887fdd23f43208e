package plan

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Input is what the planner sees of one Advanced StatefulSet.
type Input struct {
	Now time.Time
	// Name is the set's name, which its pods' names start with.
	Name     string
	Strategy Strategy
	// UpdateRevision is the revision of the current template; CurrentRevision the one before the update.
	UpdateRevision, CurrentRevision string
	// Pods are the pods the set controls, terminating ones included.
	Pods []*corev1.Pod
	// IndexLabel: pods carry their ordinal in the apps.kubernetes.io/pod-index label (gate PodIndexLabel).
	IndexLabel bool
	// Claims holds, when claims follow their templates during the rolling update (volumeClaimUpdateStrategy
	// OnPodRollingUpdate with gate StatefulSetAutoResizePVCGate), the state of each pod's claims by ordinal;
	// nil otherwise.
	Claims map[int32]ClaimState
}

// Creation is a pod to create: its ordinal and revision.
type Creation struct {
	Ordinal  int32
	Revision string
}

// Reason says why a pod is deleted.
type Reason string

// Reasons of a Deletion.
const (
	// ReasonFinished: the pod failed or succeeded; its replacement takes the same ordinal.
	ReasonFinished Reason = "Finished"
	// ReasonCondemned: the ordinal is no longer the set's (scale-down, reserved ordinal, start moved).
	ReasonCondemned Reason = "Condemned"
	// ReasonSpecified: the pod is labelled apps.kruise.io/specified-delete.
	ReasonSpecified Reason = "Specified"
)

// Deletion is a pod to delete and why.
type Deletion struct {
	Pod    *corev1.Pod
	Reason Reason
}

// Step is what one reconcile does, in this order: deletions, creations, identity repairs, then updates of
// pods to the update revision (in place or by recreation: the controller decides how).
type Step struct {
	Delete []Deletion
	Create []Creation
	// Repair are pods whose identity labels must be set.
	Repair []*corev1.Pod
	// Resize are pods whose claims must be expanded to their templates' requests.
	Resize []*corev1.Pod
	Update []*corev1.Pod
	// ScaleLimited is set when scaleStrategy.maxUnavailable held creations back.
	ScaleLimited bool
	// Wait is how soon a pod the step waits for passes minReadySeconds (0: none).
	Wait time.Duration
	// WaitingFor names the pod an ordered step waits for, for logs ("" when none).
	WaitingFor string
}

func (s *Step) wakeIn(d time.Duration) {
	if d > 0 && (s.Wait == 0 || d < s.Wait) {
		s.Wait = d
	}
}

// Plan decides one reconcile of the set, the way upstream's controller walks it: the replicas in ordinal
// order (creating missing pods, replacing finished ones), then the pods whose ordinals the set gave up
// (highest first), then the rolling update. With OrderedReady every phase stops at the first pod that is
// not available, and at the first pod it creates or deletes.
func Plan(in Input) Step {
	t := sortPods(in)
	var s Step
	if stop := scaleUp(in, t, &s); stop {
		return s
	}
	if stop := scaleDown(in, t, &s); stop {
		return s
	}
	if !in.Strategy.OnDelete && !in.Strategy.Paused {
		update(in, t, &s)
	}
	return s
}

// slotted are the set's pods by ordinal: those of its slots, those it gave up, and the revision each missing
// slot's new pod takes.
type slotted struct {
	slots []int32
	byOrd map[int32]*corev1.Pod
	// condemned are the pods of other ordinals, highest first.
	condemned []*corev1.Pod
	// newRevision is the revision of the pod to create in each empty slot.
	newRevision map[int32]string
}

func sortPods(in Input) slotted {
	st := in.Strategy
	t := slotted{slots: Slots(st.Start, st.Replicas, st.Reserved), byOrd: map[int32]*corev1.Pod{}}
	wanted := map[int32]bool{}
	for _, n := range t.slots {
		wanted[n] = true
	}
	for _, p := range in.Pods {
		switch n := Ordinal(in.Name, p.Name); {
		case wanted[n]:
			t.byOrd[n] = p
		case n >= 0:
			t.condemned = append(t.condemned, p)
		}
	}
	slices.SortFunc(t.condemned, func(a, b *corev1.Pod) int { return int(Ordinal(in.Name, b.Name) - Ordinal(in.Name, a.Name)) })
	t.newRevision = newRevisions(in, t)
	return t
}

// newRevisions gives each empty slot the revision upstream gives it: the current revision while the
// partition still keeps pods on it, the update revision otherwise. An ordered update keeps the lowest
// partition slots current; an unordered one keeps any partition pods current.
func newRevisions(in Input, t slotted) map[int32]string {
	st := in.Strategy
	out := map[int32]string{}
	old := 0
	for _, p := range t.byOrd {
		if Revision(p) != in.UpdateRevision {
			old++
		}
	}
	for i, n := range t.slots {
		if t.byOrd[n] != nil {
			continue
		}
		current := !st.OnDelete && in.CurrentRevision != "" &&
			((!st.Unordered && int32(i) < st.Partition) || (st.Unordered && int32(old) < st.Partition)) //nolint:gosec // pod counts fit
		out[n] = in.UpdateRevision
		if current {
			out[n], old = in.CurrentRevision, old+1
		}
	}
	return out
}
