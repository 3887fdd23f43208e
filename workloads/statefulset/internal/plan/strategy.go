package plan

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// Strategy is an Advanced StatefulSet's scale and update settings, resolved against its replica count.
type Strategy struct {
	Replicas int32
	// Start is the first ordinal (spec.ordinals.start, with the StatefulSetStartOrdinal gate); Reserved are
	// the ordinals spec.reserveOrdinals skips.
	Start    int32
	Reserved Reserved
	// Parallel is podManagementPolicy Parallel: pods are created and deleted without waiting for each other.
	Parallel bool
	// OnDelete: the controller never replaces pods for an update; users delete them.
	OnDelete bool
	// Partition is the number of pods kept on the current revision.
	Partition int32
	// MaxUnavailable bounds a rolling update (at least 1).
	MaxUnavailable int32
	// ScaleMaxUnavailable bounds a Parallel scale-up while pods are unavailable; nil means unbounded.
	ScaleMaxUnavailable *int32
	Paused              bool
	MinReadySeconds     int32
	// Unordered updates pods by Priority instead of from the highest ordinal down.
	Unordered bool
	Priority  *kruiseappspub.UpdatePriorityStrategy
}

// Resolve reads a set's strategy as upstream's controller does; startOrdinal says whether spec.ordinals
// applies. Percentages round down and a limit of 0 becomes 1, so an update or scale-up always moves. Values
// the webhook rejects read as their defaults.
func Resolve(spec *kruiseappsv1beta1.StatefulSetSpec, startOrdinal bool) Strategy {
	replicas := max(ptr.Deref(spec.Replicas, 1), 0)
	s := Strategy{Replicas: replicas, Parallel: spec.PodManagementPolicy == appsv1.ParallelPodManagement,
		OnDelete: spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType, MaxUnavailable: 1}
	if startOrdinal && spec.Ordinals != nil {
		s.Start = max(spec.Ordinals.Start, 0)
	}
	s.Reserved, _ = ParseReserved(spec.ReserveOrdinals)
	if ru := spec.UpdateStrategy.RollingUpdate; ru != nil {
		resolveRolling(&s, ru)
	}
	if ss := spec.ScaleStrategy; ss != nil && ss.MaxUnavailable != nil {
		s.ScaleMaxUnavailable = ptr.To(atLeastOne(ss.MaxUnavailable, replicas))
	}
	return s
}

func resolveRolling(s *Strategy, ru *kruiseappsv1beta1.RollingUpdateStatefulSetStrategy) {
	s.Partition = max(ptr.Deref(ru.Partition, 0), 0)
	s.MaxUnavailable = atLeastOne(ru.MaxUnavailable, s.Replicas)
	s.Paused = ru.Paused
	s.MinReadySeconds = max(ptr.Deref(ru.MinReadySeconds, 0), 0)
	if ru.UnorderedUpdate != nil {
		s.Unordered, s.Priority = true, ru.UnorderedUpdate.PriorityStrategy
	}
}

// atLeastOne scales v (nil: 1) against total, rounding down, and never returns less than 1.
func atLeastOne(v *intstr.IntOrString, total int32) int32 {
	if v == nil {
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(total), false)
	if err != nil || n < 1 {
		return 1
	}
	return int32(min(n, 1<<30)) //nolint:gosec // bounded just above
}
