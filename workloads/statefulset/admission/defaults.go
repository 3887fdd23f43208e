package admission

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

// Upstream's defaults.
const (
	DefaultReplicas             int32 = 1
	DefaultRevisionHistoryLimit int32 = 10
)

// Options are the feature gates the defaults depend on, upstream's.
type Options struct {
	// AutoDeletePVC (gate StatefulSetAutoDeletePVC) defaults persistentVolumeClaimRetentionPolicy to
	// Retain/Retain.
	AutoDeletePVC bool
	// AutoResizePVC (gate StatefulSetAutoResizePVCGate) defaults volumeClaimUpdateStrategy.type to OnDelete.
	AutoResizePVC bool
}

// Default applies upstream's defaults to a set being created: the spec's, the pod template's and the volume
// claim templates'. Applying it again changes nothing; a nil set is left alone.
func Default(set *kruiseappsv1beta1.StatefulSet, opts Options) { DefaultUpdate(set, nil, opts) }

// DefaultUpdate applies the defaults to a set being updated from old (nil on create). Like upstream it
// defaults the pod and claim templates only on create or when the pod template changed, so an update that
// leaves the template alone never changes the revision of a set stored without template defaults.
func DefaultUpdate(set, old *kruiseappsv1beta1.StatefulSet, opts Options) {
	if set == nil {
		return
	}
	defaultSpec(&set.Spec, opts)
	if old == nil || !reflect.DeepEqual(set.Spec.Template, old.Spec.Template) {
		podtemplate.Default(&set.Spec.Template)
		for i := range set.Spec.VolumeClaimTemplates {
			podtemplate.DefaultClaimTemplate(&set.Spec.VolumeClaimTemplates[i])
		}
	}
}

func defaultSpec(s *kruiseappsv1beta1.StatefulSetSpec, opts Options) {
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	}
	if s.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		defaultRollingUpdate(&s.UpdateStrategy)
	}
	if opts.AutoDeletePVC {
		defaultRetention(s)
	}
	if opts.AutoResizePVC && s.VolumeClaimUpdateStrategy.Type == "" {
		s.VolumeClaimUpdateStrategy.Type = kruiseappsv1beta1.OnPVCDeleteVolumeClaimUpdateStrategyType
	}
	if s.Replicas == nil {
		s.Replicas = ptr.To(DefaultReplicas)
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr.To(DefaultRevisionHistoryLimit)
	}
}

func defaultRollingUpdate(u *kruiseappsv1beta1.StatefulSetUpdateStrategy) {
	if u.RollingUpdate == nil {
		u.RollingUpdate = &kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{}
	}
	ru := u.RollingUpdate
	if ru.Partition == nil {
		ru.Partition = ptr.To[int32](0)
	}
	if ru.MaxUnavailable == nil {
		ru.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	}
	if ru.PodUpdatePolicy == "" {
		ru.PodUpdatePolicy = kruiseappsv1beta1.RecreatePodUpdateStrategyType
	}
	if ru.MinReadySeconds == nil {
		ru.MinReadySeconds = ptr.To[int32](0)
	}
}

func defaultRetention(s *kruiseappsv1beta1.StatefulSetSpec) {
	if s.PersistentVolumeClaimRetentionPolicy == nil {
		s.PersistentVolumeClaimRetentionPolicy = &kruiseappsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	p := s.PersistentVolumeClaimRetentionPolicy
	if p.WhenDeleted == "" {
		p.WhenDeleted = kruiseappsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p.WhenScaled == "" {
		p.WhenScaled = kruiseappsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType
	}
}
