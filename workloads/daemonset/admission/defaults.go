package admission

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Upstream's Advanced DaemonSet defaults.
const (
	DefaultBurstReplicas        = 250
	DefaultRevisionHistoryLimit = 10
)

// Default applies upstream's defaults to a DaemonSet being created or updated: burstReplicas 250,
// revisionHistoryLimit 10, a RollingUpdate of type Standard with maxUnavailable 1 when neither maxUnavailable
// nor maxSurge is set. The deprecated Surging type becomes Standard with a surge of 1 (and no unavailable
// node) unless set otherwise. Applying it again changes nothing; a nil DaemonSet is left alone.
func Default(ds *kruiseappsv1alpha1.DaemonSet) {
	if ds == nil {
		return
	}
	s := &ds.Spec
	if s.BurstReplicas == nil {
		s.BurstReplicas = ptr.To(intstr.FromInt32(DefaultBurstReplicas))
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = kruiseappsv1alpha1.RollingUpdateDaemonSetStrategyType
	}
	if s.UpdateStrategy.Type == kruiseappsv1alpha1.RollingUpdateDaemonSetStrategyType {
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &kruiseappsv1alpha1.RollingUpdateDaemonSet{}
		}
		defaultRollingUpdate(s.UpdateStrategy.RollingUpdate)
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr.To[int32](DefaultRevisionHistoryLimit)
	}
}

func defaultRollingUpdate(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet) {
	if ru.Type == kruiseappsv1alpha1.DeprecatedSurgingRollingUpdateType {
		if ru.MaxSurge == nil {
			ru.MaxSurge = ptr.To(intstr.FromInt32(1))
		}
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		}
	}
	if ru.Type == "" || ru.Type == kruiseappsv1alpha1.DeprecatedSurgingRollingUpdateType {
		ru.Type = kruiseappsv1alpha1.StandardRollingUpdateType
	}
	if ru.MaxUnavailable == nil && ru.MaxSurge == nil {
		ru.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		ru.MaxSurge = ptr.To(intstr.FromInt32(0))
	}
}
