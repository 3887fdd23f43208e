package admission

import (
	"reflect"

	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

// Default applies upstream's defaults to an AdvancedCronJob being created (old nil) or updated from old:
// concurrencyPolicy Allow, paused false, successfulJobsHistoryLimit 3 and failedJobsHistoryLimit 1, and the
// pod template defaults, which like upstream it applies only when the template is new or changed. Applying
// it again changes nothing; a nil AdvancedCronJob is left alone.
func Default(acj, old *kruiseappsv1alpha1.AdvancedCronJob) {
	if acj == nil {
		return
	}
	s := &acj.Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = kruiseappsv1alpha1.DefaultAdvancedCronJobConcurrencyPolicy
	}
	if s.Paused == nil {
		s.Paused = ptr.To(false)
	}
	if s.SuccessfulJobsHistoryLimit == nil {
		s.SuccessfulJobsHistoryLimit = ptr.To(kruiseappsv1alpha1.DefaultSuccessfulJobsHistoryLimit)
	}
	if s.FailedJobsHistoryLimit == nil {
		s.FailedJobsHistoryLimit = ptr.To(kruiseappsv1alpha1.DefaultFailedJobsHistoryLimit)
	}
	if old != nil && reflect.DeepEqual(s.Template, old.Spec.Template) {
		return
	}
	if s.Template.JobTemplate != nil {
		podtemplate.Default(&s.Template.JobTemplate.Spec.Template)
	}
	if s.Template.BroadcastJobTemplate != nil {
		podtemplate.Default(&s.Template.BroadcastJobTemplate.Spec.Template)
	}
}
