package admission

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

// Default applies upstream's defaults to a BroadcastJob: completionPolicy.type Always, parallelism without a
// limit (2147483647), failurePolicy.type FailFast, and the pod template's defaults (podtemplate.Default) when
// the template is new or changed (old is the stored job on update, else nil), as upstream applies them unless
// its TemplateNoDefaults gate is on. An unset restartPolicy becomes OnFailure first: upstream means to default
// it so, but applies the template's defaults (restartPolicy Always) before, which its own validation then
// refuses. Applying it again changes nothing; a nil job is left alone.
func Default(job, old *kruiseappsv1alpha1.BroadcastJob) {
	if job == nil {
		return
	}
	s := &job.Spec
	templateChanged := old == nil || !equality.Semantic.DeepEqual(&old.Spec.Template, &s.Template)
	if s.CompletionPolicy.Type == "" {
		s.CompletionPolicy.Type = kruiseappsv1alpha1.DefaultBroadcastJobCompletionPolicyType
	}
	if s.Parallelism == nil {
		s.Parallelism = ptr.To(intstr.FromInt32(kruiseappsv1alpha1.DefaultBroadcastJobParallelism))
	}
	if s.FailurePolicy.Type == "" {
		s.FailurePolicy.Type = kruiseappsv1alpha1.DefaultBroadcastJobFailurePolicyType
	}
	if s.Template.Spec.RestartPolicy == "" {
		s.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}
	if templateChanged {
		podtemplate.Default(&s.Template)
	}
}
