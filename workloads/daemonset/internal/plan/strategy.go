package plan

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// DefaultBurstReplicas bounds the pods one reconcile creates or deletes when spec.burstReplicas is unset
// (upstream's, chosen so that a large cluster does not flood its image registry).
const DefaultBurstReplicas = 250

// Strategy is a DaemonSet's update strategy with every count resolved over the nodes that should run it.
type Strategy struct {
	// Rolling is true for RollingUpdate, false for OnDelete.
	Rolling bool
	// InPlace is rollingUpdateType InPlaceIfPossible.
	InPlace bool
	// MaxUnavailable and MaxSurge are node counts; at most one is 0, as upstream's controller treats a
	// DaemonSet that allows neither as allowing one unavailable node.
	MaxUnavailable, MaxSurge int
	// Partition is the number of nodes kept on old revisions.
	Partition int
	// Selector limits the update to the nodes it matches; nil updates every node.
	Selector labels.Selector
	// Paused stops the rolling update (pods are still created and deleted as nodes come and go).
	Paused bool
	// Burst bounds the pods created, and the pods deleted, by one reconcile.
	Burst int
	// Progressive: the partition also holds back pods of nodes without one (the
	// daemonset.kruise.io/progressive-create-pod annotation).
	Progressive bool
	// MinReadySeconds is how long a pod must be ready to count as available.
	MinReadySeconds int32
}

// Resolve reads the strategy of ds for desired nodes. A selector that does not parse selects no node, so a
// DaemonSet the webhook did not see updates nothing rather than everything.
func Resolve(ds *kruiseappsv1alpha1.DaemonSet, desired int) Strategy {
	s := Strategy{
		Rolling:         ds.Spec.UpdateStrategy.Type != kruiseappsv1alpha1.OnDeleteDaemonSetStrategyType,
		Burst:           burst(ds.Spec.BurstReplicas, desired),
		Progressive:     ds.Annotations[kruiseappsv1alpha1.ProgressiveCreatePodAnnotation] == "true",
		MinReadySeconds: max(ds.Spec.MinReadySeconds, 0),
	}
	if !s.Rolling {
		return s
	}
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		s.InPlace = ru.Type == kruiseappsv1alpha1.InplaceRollingUpdateType
		s.MaxUnavailable = scaled(ru.MaxUnavailable, desired, 0)
		s.MaxSurge = scaled(ru.MaxSurge, desired, 0)
		s.Partition = scaled(ru.Partition, desired, 0)
		s.Paused = ru.Paused != nil && *ru.Paused
		s.Selector = updateSelector(ru.Selector)
	}
	if desired > 0 && s.MaxUnavailable == 0 && s.MaxSurge == 0 {
		s.MaxUnavailable = 1
	}
	return s
}

// AllowsSurge reports whether the strategy lets a node run an old and a new pod at once.
func (s Strategy) AllowsSurge() bool { return s.Rolling && s.MaxSurge > 0 }

// scaled is an int-or-percent of total, percentages rounded up as upstream does; unset or unreadable gives
// def.
func scaled(v *intstr.IntOrString, total, def int) int {
	if v == nil {
		return def
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, true)
	if err != nil {
		return def
	}
	return max(n, 0)
}

// burst is spec.burstReplicas over the desired nodes, percentages rounded down as upstream does, but never
// 0: a DaemonSet with work to do would never do it.
func burst(v *intstr.IntOrString, desired int) int {
	if v == nil {
		return DefaultBurstReplicas
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, desired, false)
	if err != nil {
		return DefaultBurstReplicas
	}
	return max(n, 1)
}

func updateSelector(ls *metav1.LabelSelector) labels.Selector {
	if ls == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}
