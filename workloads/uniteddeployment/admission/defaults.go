package admission

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

// Default applies upstream's defaults to a UnitedDeployment: replicas 1, revisionHistoryLimit 10, the Manual
// update strategy (with an empty manualUpdate), and the pod template's (and claim templates') defaults when
// the template is new or changed (old is the stored object on update, else nil): the defaulted template is
// hashed into the revision, so it must be the same every time. A nil object is left alone.
func Default(ud, old *kruiseappsv1alpha1.UnitedDeployment) {
	if ud == nil {
		return
	}
	s := &ud.Spec
	if s.Replicas == nil {
		s.Replicas = ptr.To[int32](1)
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = kruiseappsv1alpha1.ManualUpdateStrategyType
	}
	if s.UpdateStrategy.Type == kruiseappsv1alpha1.ManualUpdateStrategyType && s.UpdateStrategy.ManualUpdate == nil {
		s.UpdateStrategy.ManualUpdate = &kruiseappsv1alpha1.ManualUpdate{}
	}
	if old == nil || !equality.Semantic.DeepEqual(&old.Spec.Template, &s.Template) {
		defaultTemplate(&s.Template)
	}
}

func defaultTemplate(t *kruiseappsv1alpha1.SubsetTemplate) {
	pod, claims := podAndClaims(t)
	if pod != nil {
		podtemplate.Default(pod)
	}
	for i := range claims {
		podtemplate.DefaultClaimTemplate(&claims[i])
	}
}

// podAndClaims are the pod template and claim templates of the template's first workload.
func podAndClaims(t *kruiseappsv1alpha1.SubsetTemplate) (*corev1.PodTemplateSpec, []corev1.PersistentVolumeClaim) {
	switch {
	case t.StatefulSetTemplate != nil:
		return &t.StatefulSetTemplate.Spec.Template, t.StatefulSetTemplate.Spec.VolumeClaimTemplates
	case t.AdvancedStatefulSetTemplate != nil:
		return &t.AdvancedStatefulSetTemplate.Spec.Template, t.AdvancedStatefulSetTemplate.Spec.VolumeClaimTemplates
	case t.CloneSetTemplate != nil:
		return &t.CloneSetTemplate.Spec.Template, t.CloneSetTemplate.Spec.VolumeClaimTemplates
	case t.DeploymentTemplate != nil:
		return &t.DeploymentTemplate.Spec.Template, nil
	}
	return nil, nil
}
