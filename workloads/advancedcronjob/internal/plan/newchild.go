package plan

import (
	"maps"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// TemplateKind is the kind of job the AdvancedCronJob creates, as status.type reports it: Job when it has a
// jobTemplate, else ImageListPullJob when it has an imageListPullJobTemplate, else BroadcastJob (upstream's
// reading; the webhook requires exactly one template).
func TemplateKind(spec *kruiseappsv1alpha1.AdvancedCronJobSpec) kruiseappsv1alpha1.TemplateKind {
	switch {
	case spec.Template.JobTemplate != nil:
		return kruiseappsv1alpha1.JobTemplate
	case spec.Template.ImageListPullJobTemplate != nil:
		return kruiseappsv1alpha1.ImageListPullJobTemplate
	default:
		return kruiseappsv1alpha1.BroadcastJobTemplate
	}
}

// childMeta is the metadata of the child scheduled at t: the template's labels and annotations, the
// scheduled-at annotation and a controller reference to the AdvancedCronJob (the garbage collector removes
// children with it). Nothing is added to the child's pod template.
func childMeta(acj *kruiseappsv1alpha1.AdvancedCronJob, tmpl *metav1.ObjectMeta, t time.Time) metav1.ObjectMeta {
	labels := map[string]string{}
	maps.Copy(labels, tmpl.Labels)
	annotations := map[string]string{}
	maps.Copy(annotations, tmpl.Annotations)
	annotations[kruiseappsv1alpha1.ScheduledAtAnnotationKey] = ScheduledAt(t)
	owner := metav1.NewControllerRef(acj, kruiseappsv1alpha1.GroupVersion.WithKind(kruiseappsv1alpha1.AdvancedCronJobKind))
	return metav1.ObjectMeta{
		Name: ChildName(acj.Name, t), Namespace: acj.Namespace,
		Labels: labels, Annotations: annotations, OwnerReferences: []metav1.OwnerReference{*owner},
	}
}

// NewJob is the Job of the run scheduled at t; the AdvancedCronJob must have a jobTemplate.
func NewJob(acj *kruiseappsv1alpha1.AdvancedCronJob, t time.Time) *batchv1.Job {
	tmpl := acj.Spec.Template.JobTemplate
	return &batchv1.Job{ObjectMeta: childMeta(acj, &tmpl.ObjectMeta, t), Spec: *tmpl.Spec.DeepCopy()}
}

// NewBroadcastJob is the BroadcastJob of the run scheduled at t; the AdvancedCronJob must have a
// broadcastJobTemplate.
func NewBroadcastJob(acj *kruiseappsv1alpha1.AdvancedCronJob, t time.Time) *kruiseappsv1alpha1.BroadcastJob {
	tmpl := acj.Spec.Template.BroadcastJobTemplate
	return &kruiseappsv1alpha1.BroadcastJob{ObjectMeta: childMeta(acj, &tmpl.ObjectMeta, t), Spec: *tmpl.Spec.DeepCopy()}
}

// NewImageListPullJob is the ImageListPullJob of the run scheduled at t; the AdvancedCronJob must have an
// imageListPullJobTemplate.
func NewImageListPullJob(acj *kruiseappsv1alpha1.AdvancedCronJob, t time.Time) *kruiseappsv1alpha1.ImageListPullJob {
	tmpl := acj.Spec.Template.ImageListPullJobTemplate
	return &kruiseappsv1alpha1.ImageListPullJob{ObjectMeta: childMeta(acj, &tmpl.ObjectMeta, t), Spec: *tmpl.Spec.DeepCopy()}
}
