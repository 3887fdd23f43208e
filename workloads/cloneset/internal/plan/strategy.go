package plan

import (
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Strategy is a CloneSet's scale and update settings resolved against its replica count.
type Strategy struct {
	Replicas        int32
	MinReadySeconds int32
	// Partition is the number of pods kept on other revisions; ExpectedUpdated is replicas - partition.
	Partition, ExpectedUpdated int32
	// MaxUnavailable and MaxSurge bound an update.
	MaxUnavailable, MaxSurge int32
	// ScaleMaxUnavailable bounds scale-up while pods are unavailable; nil means unbounded.
	ScaleMaxUnavailable *int32
	Paused              bool
	Type                kruiseappsv1alpha1.CloneSetUpdateStrategyType
}

// Resolve reads a CloneSet's strategy. Percentages of partition and maxSurge round up; maxUnavailable rounds
// up too unless the update may surge (upstream's rule). An update that may neither surge nor make a pod
// unavailable could never progress, so maxUnavailable is then 1. Invalid values (the webhook rejects them)
// count as 0.
func Resolve(cs *kruiseappsv1alpha1.CloneSet) Strategy {
	replicas := int32(1)
	if cs.Spec.Replicas != nil {
		replicas = max(*cs.Spec.Replicas, 0)
	}
	u := cs.Spec.UpdateStrategy
	s := Strategy{
		Replicas: replicas, MinReadySeconds: cs.Spec.MinReadySeconds, Paused: u.Paused, Type: u.Type,
		Partition: min(scaled(u.Partition, replicas, true, zero), replicas),
		MaxSurge:  scaled(u.MaxSurge, replicas, true, zero),
	}
	s.MaxUnavailable = scaled(u.MaxUnavailable, replicas, s.MaxSurge == 0, defaultMaxUnavailable)
	if s.Type == "" {
		s.Type = kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType
	}
	if s.MaxUnavailable == 0 && s.MaxSurge == 0 {
		s.MaxUnavailable = 1
	}
	s.ExpectedUpdated = replicas - s.Partition
	if mu := cs.Spec.ScaleStrategy.MaxUnavailable; mu != nil {
		v := scaled(mu, replicas, false, zero)
		s.ScaleMaxUnavailable = &v
	}
	return s
}

var defaultMaxUnavailable = intstr.FromString(kruiseappsv1alpha1.DefaultCloneSetMaxUnavailable)

func scaled(v *intstr.IntOrString, total int32, roundUp bool, def intstr.IntOrString) int32 {
	if v == nil {
		v = &def
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(total), roundUp)
	if err != nil || n < 0 {
		return 0
	}
	return int32(min(n, 1<<30)) //nolint:gosec // bounded just above
}

var zero = intstr.FromInt32(0)
