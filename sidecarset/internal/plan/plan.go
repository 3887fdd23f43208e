// Package plan decides, from a SidecarSet and the pods it injected, what its status is and which pods'
// sidecars to update in place now. It is pure: the controller gathers the pods and applies the plan.
package plan

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	intstrutil "k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/updatesort"
)

// Input is what the planner needs: the SidecarSet and the active pods it injected.
type Input struct {
	Set  *kruiseappsv1alpha1.SidecarSet
	Pods []*corev1.Pod
	Now  metav1.Time
}

// Counts are the SidecarSet's status counters.
type Counts struct {
	Matched, Updated, Ready, UpdatedReady int32
}

// Plan is what the controller applies.
type Plan struct {
	Counts Counts
	// Update are the pods whose sidecars are updated in place now, in order.
	Update []*corev1.Pod
	// NotUpgradable are outdated pods whose sidecars changed more than images: they keep their version
	// until they are re-created.
	NotUpgradable []*corev1.Pod
	// Conditions are copies of the pods whose SidecarSetUpgradable condition changes, to write as status.
	Conditions []*corev1.Pod
	// Reset are the pods whose hot upgrades are through: their old containers go back to the empty image.
	Reset []*corev1.Pod
	// Blocked says why no pod is updated although some are outdated ("" when nothing blocks).
	Blocked string
}

// Reasons an update does not proceed.
const (
	BlockedNotUpdate = "updateStrategy.type is NotUpdate"
	BlockedPaused    = "updateStrategy.paused is true"
)

// Compute plans one reconcile of the SidecarSet.
func Compute(in Input) Plan {
	f := factsOf(in)
	p := Plan{Counts: count(in, f)}
	outdated, notUpgradable := outdatedPods(in, f)
	p.NotUpgradable = notUpgradable
	p.Conditions = conditionWrites(in, notUpgradable, in.Now)
	p.Reset = toReset(in)
	if len(outdated) == 0 {
		return p
	}
	if p.Blocked = blocked(in.Set); p.Blocked != "" {
		return p
	}
	p.Update = pick(in, f, outdated)
	return p
}

// podFacts are what the plan asks of a pod, read once per Compute: both come from JSON annotations, and
// parsing them per question (and per comparison while sorting) was most of a reconcile's cost.
type podFacts struct{ updated, ready bool }

func factsOf(in Input) map[*corev1.Pod]podFacts {
	out := make(map[*corev1.Pod]podFacts, len(in.Pods))
	for _, pod := range in.Pods {
		out[pod] = podFacts{updated: inject.IsUpdated(pod, in.Set), ready: ReadyAndConsistent(pod, in.Set)}
	}
	return out
}

func count(in Input, f map[*corev1.Pod]podFacts) Counts {
	c := Counts{Matched: int32(len(in.Pods))}
	for _, pod := range in.Pods {
		c.Updated += b2i(f[pod].updated)
		c.Ready += b2i(f[pod].ready)
		c.UpdatedReady += b2i(f[pod].updated && f[pod].ready)
	}
	return c
}

// outdatedPods are the pods not at the current hash that the update selector picks, split by whether only
// images differ.
func outdatedPods(in Input, f map[*corev1.Pod]podFacts) (upgradable, notUpgradable []*corev1.Pod) {
	sel := updateSelector(in.Set)
	for _, pod := range in.Pods {
		if f[pod].updated || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if inject.UpdatableInPlace(pod, in.Set) {
			upgradable = append(upgradable, pod)
		} else {
			notUpgradable = append(notUpgradable, pod)
		}
	}
	return upgradable, notUpgradable
}

// updateSelector is updateStrategy.selector; without one, or with one the webhook would have refused,
// every pod.
func updateSelector(set *kruiseappsv1alpha1.SidecarSet) labels.Selector {
	if set.Spec.UpdateStrategy.Selector == nil {
		return labels.Everything()
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.UpdateStrategy.Selector)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

func blocked(set *kruiseappsv1alpha1.SidecarSet) string {
	switch {
	case set.Spec.UpdateStrategy.Type == kruiseappsv1alpha1.NotUpdateSidecarSetStrategyType:
		return BlockedNotUpdate
	case set.Spec.UpdateStrategy.Paused:
		return BlockedPaused
	}
	return ""
}

// pick orders the outdated pods and takes as many as partition and maxUnavailable allow: partition pods
// of all matched ones keep the old version, and at most maxUnavailable pods are updated but not yet
// ready and consistent.
func pick(in Input, f map[*corev1.Pod]podFacts, outdated []*corev1.Pod) []*corev1.Pod {
	total := len(in.Pods)
	st := in.Set.Spec.UpdateStrategy
	kept := scaled(st.Partition, total, true, 0)
	updated, unavailable := 0, 0
	for _, pod := range in.Pods {
		if f[pod].updated {
			updated++
			unavailable += int(b2i(!f[pod].ready))
		}
	}
	n := min(total-kept-updated, scaled(st.MaxUnavailable, total, false, 1)-unavailable, len(outdated))
	if n <= 0 {
		return nil
	}
	order(in.Set, f, outdated)
	return outdated[:n]
}

// scaled is an int-or-percent of total (rounded up or down), def when unset; a maxUnavailable that rounds
// to nothing still lets one pod through, or the update could never start.
func scaled(v *intstrutil.IntOrString, total int, roundUp bool, def int) int {
	if v == nil {
		return def
	}
	n, err := intstrutil.GetScaledValueFromIntOrPercent(v, total, roundUp)
	if err != nil {
		return def
	}
	if def == 1 && n < 1 {
		return 1
	}
	return n
}

// order sorts pods the way upstream updates them: not ready first (updating them costs no availability),
// then the priority strategy, spread by the scatter strategy.
func order(set *kruiseappsv1alpha1.SidecarSet, f map[*corev1.Pod]podFacts, pods []*corev1.Pod) {
	st := set.Spec.UpdateStrategy
	updatesort.Stable(pods, updatesort.NewPriority(st.PriorityStrategy))
	copy(pods, updatesort.Scatter(pods, st.ScatterStrategy))
	updatesort.Stable(pods, func(a, b *corev1.Pod) int {
		return int(b2i(f[a].ready) - b2i(f[b].ready))
	})
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}
