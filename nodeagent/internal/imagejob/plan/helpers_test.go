package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func mtime(s int) *metav1.Time { return ptr.To(metav1.NewTime(at(s))) }

const jobUID = "job-uid"

// pullJob is an ImagePullJob of nginx:1.27 in ns with parallelism p, changed by each option.
func pullJob(p int32, opts ...func(*kruiseappsv1alpha1.ImagePullJob)) *kruiseappsv1alpha1.ImagePullJob {
	j := &kruiseappsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pull", UID: jobUID},
		Spec: kruiseappsv1alpha1.ImagePullJobSpec{Image: "nginx:1.27", ImagePullJobTemplate: kruiseappsv1alpha1.ImagePullJobTemplate{
			Parallelism:      ptr.To(intstr.FromInt32(p)),
			CompletionPolicy: kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Always},
		}},
	}
	for _, o := range opts {
		o(j)
	}
	return j
}

// started marks the job started at t0.
func started(j *kruiseappsv1alpha1.ImagePullJob) { j.Status.StartTime = mtime(0) }

func never(j *kruiseappsv1alpha1.ImagePullJob) {
	j.Spec.CompletionPolicy = kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Never}
}

func deadline(s int64) func(*kruiseappsv1alpha1.ImagePullJob) {
	return func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To(s) }
}

func activeBefore(nodes string) func(*kruiseappsv1alpha1.ImagePullJob) {
	return func(j *kruiseappsv1alpha1.ImagePullJob) {
		j.Annotations = map[string]string{ActiveNodesAnnotation: nodes}
	}
}

func failedBefore(nodes ...string) func(*kruiseappsv1alpha1.ImagePullJob) {
	return func(j *kruiseappsv1alpha1.ImagePullJob) { j.Status.FailedNodes = nodes }
}

// node is an empty NodeImage.
func node(name string, labels map[string]string) *kruiseappsv1alpha1.NodeImage {
	return &kruiseappsv1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// tagged is a NodeImage whose nginx:1.27 tag (version 2) names owners (UIDs, which are also their names), with
// the agent's status for version statusVersion in phase (none when phase is empty).
func tagged(name string, owners []types.UID, phase kruiseappsv1alpha1.ImagePullPhase, statusVersion int64, msg string) *kruiseappsv1alpha1.NodeImage {
	ni := node(name, nil)
	var refs []corev1.ObjectReference
	for _, o := range owners {
		refs = append(refs, corev1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImagePullJob", Namespace: "ns", Name: string(o), UID: o})
	}
	ni.Spec.Images = map[string]kruiseappsv1alpha1.ImageSpec{"nginx": {Tags: []kruiseappsv1alpha1.ImageTagSpec{{Tag: "1.27", Version: 2, OwnerReferences: refs}}}}
	if phase != "" {
		ni.Status.ImageStatuses = map[string]kruiseappsv1alpha1.ImageStatus{"nginx": {Tags: []kruiseappsv1alpha1.ImageTagStatus{
			{Tag: "1.27", Version: statusVersion, Phase: phase, Message: msg}}}}
	}
	return ni
}

// asked sets the creation time of ni's nginx:1.27 tag to at(s).
func asked(s int, ni *kruiseappsv1alpha1.NodeImage) *kruiseappsv1alpha1.NodeImage {
	img := ni.Spec.Images["nginx"]
	img.Tags[0].CreatedAt = mtime(s)
	return ni
}
