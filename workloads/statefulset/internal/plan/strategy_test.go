package plan

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

func TestResolve(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }
	for _, tc := range []struct {
		name         string
		spec         kruiseappsv1beta1.StatefulSetSpec
		startOrdinal bool
		check        func(Strategy) bool
	}{
		{name: "defaults: one replica, ordered, maxUnavailable 1", spec: kruiseappsv1beta1.StatefulSetSpec{},
			check: func(s Strategy) bool {
				return s.Replicas == 1 && !s.Parallel && s.MaxUnavailable == 1 && s.ScaleMaxUnavailable == nil
			}},
		{name: "maxUnavailable 30% of 10 rounds down", spec: spec(10, func(ru *kruiseappsv1beta1.RollingUpdateStatefulSetStrategy) { ru.MaxUnavailable = pct("35%") }),
			check: func(s Strategy) bool { return s.MaxUnavailable == 3 }},
		{name: "maxUnavailable 10% of 3 is 1, not 0", spec: spec(3, func(ru *kruiseappsv1beta1.RollingUpdateStatefulSetStrategy) { ru.MaxUnavailable = pct("10%") }),
			check: func(s Strategy) bool { return s.MaxUnavailable == 1 }},
		{name: "partition, paused, minReadySeconds, unordered", spec: spec(5, func(ru *kruiseappsv1beta1.RollingUpdateStatefulSetStrategy) {
			ru.Partition, ru.Paused, ru.MinReadySeconds = ptr.To[int32](3), true, ptr.To[int32](7)
			ru.UnorderedUpdate = &kruiseappsv1beta1.UnorderedUpdateStrategy{}
		}), check: func(s Strategy) bool { return s.Partition == 3 && s.Paused && s.MinReadySeconds == 7 && s.Unordered }},
		{name: "the seed's scale maxUnavailable 10% of 100", spec: func() kruiseappsv1beta1.StatefulSetSpec {
			s := spec(100, nil)
			s.ScaleStrategy = &kruiseappsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: pct("10%")}
			return s
		}(), check: func(s Strategy) bool { return s.ScaleMaxUnavailable != nil && *s.ScaleMaxUnavailable == 10 }},
		{name: "ordinals.start without the gate is ignored", spec: func() kruiseappsv1beta1.StatefulSetSpec {
			s := spec(1, nil)
			s.Ordinals = &kruiseappsv1beta1.StatefulSetOrdinals{Start: 5}
			return s
		}(), check: func(s Strategy) bool { return s.Start == 0 }},
		{name: "ordinals.start with the gate", startOrdinal: true, spec: func() kruiseappsv1beta1.StatefulSetSpec {
			s := spec(1, nil)
			s.Ordinals = &kruiseappsv1beta1.StatefulSetOrdinals{Start: 5}
			return s
		}(), check: func(s Strategy) bool { return s.Start == 5 }},
		{name: "OnDelete and Parallel", spec: func() kruiseappsv1beta1.StatefulSetSpec {
			s := spec(1, nil)
			s.UpdateStrategy.Type, s.PodManagementPolicy = appsv1.OnDeleteStatefulSetStrategyType, appsv1.ParallelPodManagement
			return s
		}(), check: func(s Strategy) bool { return s.OnDelete && s.Parallel }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Resolve(&tc.spec, tc.startOrdinal); !tc.check(got) {
				t.Errorf("Resolve = %+v", got)
			}
		})
	}
}

func spec(replicas int32, change func(*kruiseappsv1beta1.RollingUpdateStatefulSetStrategy)) kruiseappsv1beta1.StatefulSetSpec {
	ru := &kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{}
	if change != nil {
		change(ru)
	}
	return kruiseappsv1beta1.StatefulSetSpec{Replicas: ptr.To(replicas),
		UpdateStrategy: kruiseappsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: ru}}
}
