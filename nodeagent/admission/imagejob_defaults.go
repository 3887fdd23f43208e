package admission

import (
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// DefaultImagePullJob applies upstream's ImagePullJob defaults: completionPolicy.type Always, pullPolicy
// timeoutSeconds 600 and backoffLimit 3, imagePullPolicy IfNotPresent. old is the stored job on update; the
// defaults do not depend on it. Applying them again changes nothing; a nil job is left alone.
func DefaultImagePullJob(job, _ *kruiseappsv1alpha1.ImagePullJob) {
	if job != nil {
		defaultTemplate(&job.Spec.ImagePullJobTemplate)
	}
}

// DefaultImageListPullJob applies the same defaults to an ImageListPullJob's template, as upstream does.
func DefaultImageListPullJob(job, _ *kruiseappsv1alpha1.ImageListPullJob) {
	if job != nil {
		defaultTemplate(&job.Spec.ImagePullJobTemplate)
	}
}

func defaultTemplate(t *kruiseappsv1alpha1.ImagePullJobTemplate) {
	if t.CompletionPolicy.Type == "" {
		t.CompletionPolicy.Type = kruiseappsv1alpha1.DefaultImagePullJobCompletionPolicyType
	}
	if t.PullPolicy == nil {
		t.PullPolicy = &kruiseappsv1alpha1.PullPolicy{}
	}
	if t.PullPolicy.TimeoutSeconds == nil {
		t.PullPolicy.TimeoutSeconds = ptr.To(kruiseappsv1alpha1.DefaultImagePullTimeoutSeconds)
	}
	if t.PullPolicy.BackoffLimit == nil {
		t.PullPolicy.BackoffLimit = ptr.To(kruiseappsv1alpha1.DefaultImagePullBackoffLimit)
	}
	if t.ImagePullPolicy == "" {
		t.ImagePullPolicy = kruiseappsv1alpha1.DefaultImagePullPolicy
	}
}
