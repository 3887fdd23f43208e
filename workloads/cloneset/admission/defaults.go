package admission

import (
	"reflect"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

// Upstream's CloneSet defaults.
const (
	DefaultReplicas             int32 = 1
	DefaultRevisionHistoryLimit int32 = 10
)

// Default applies upstream's defaults to a CloneSet being created: the spec's, the pod template's and the
// volume claim templates'. Applying it again changes nothing; a nil CloneSet is left alone.
func Default(cs *kruiseappsv1alpha1.CloneSet) {
	if cs == nil {
		return
	}
	defaultSpec(&cs.Spec)
	defaultTemplates(&cs.Spec)
}

// DefaultUpdate applies the defaults to a CloneSet being updated from old. Like upstream it defaults the
// pod and claim templates only when the pod template changed, so an update that leaves the template alone
// never changes the revision of a CloneSet stored without template defaults.
func DefaultUpdate(cs, old *kruiseappsv1alpha1.CloneSet) {
	if cs == nil {
		return
	}
	defaultSpec(&cs.Spec)
	if old == nil || !reflect.DeepEqual(cs.Spec.Template, old.Spec.Template) {
		defaultTemplates(&cs.Spec)
	}
}

func defaultSpec(s *kruiseappsv1alpha1.CloneSetSpec) {
	if s.Replicas == nil {
		s.Replicas = ptr.To(DefaultReplicas)
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr.To(DefaultRevisionHistoryLimit)
	}
	defaultUpdateStrategy(&s.UpdateStrategy)
}

// defaultUpdateStrategy fills the strategy; partition and maxSurge default to integers, maxUnavailable to
// a percentage, as upstream serializes them.
func defaultUpdateStrategy(u *kruiseappsv1alpha1.CloneSetUpdateStrategy) {
	switch u.Type {
	case "":
		u.Type = kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType
	case kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, kruiseappsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType:
		if u.InPlaceUpdateStrategy == nil {
			u.InPlaceUpdateStrategy = &kruiseappspub.InPlaceUpdateStrategy{}
		}
	}
	if u.Partition == nil {
		u.Partition = ptr.To(intstr.FromInt32(0))
	}
	if u.MaxUnavailable == nil {
		u.MaxUnavailable = ptr.To(intstr.FromString(kruiseappsv1alpha1.DefaultCloneSetMaxUnavailable))
	}
	if u.MaxSurge == nil {
		u.MaxSurge = ptr.To(intstr.FromInt32(0))
	}
}

func defaultTemplates(s *kruiseappsv1alpha1.CloneSetSpec) {
	podtemplate.Default(&s.Template)
	for i := range s.VolumeClaimTemplates {
		podtemplate.DefaultClaimTemplate(&s.VolumeClaimTemplates[i])
	}
}
