package main

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// instantiateAnnotation marks a job created by hand from a cron job, as kubectl does.
const instantiateAnnotation = "cronjob.kubernetes.io/instantiate"

// jobSource is what a job is created from: an image and command, or the template of a cron job.
type jobSource struct {
	Image   string
	Command []string
	// Owner is the cron job the template comes from; nil for --image.
	Owner *metav1.OwnerReference
}

// manualMeta is the metadata of a job made from a template: its labels, its annotations plus the
// instantiate mark, and a reference to the cron job (not a controller reference, so the cron job's
// controller neither counts nor deletes it).
func manualMeta(name string, tmpl metav1.ObjectMeta, owner *metav1.OwnerReference) metav1.ObjectMeta {
	annotations := map[string]string{instantiateAnnotation: "manual"}
	for k, v := range tmpl.Annotations {
		annotations[k] = v
	}
	return metav1.ObjectMeta{Name: name, Labels: tmpl.Labels, Annotations: annotations, OwnerReferences: []metav1.OwnerReference{*owner}}
}

// imageTemplate is the pod template of a job created with --image: one container named after the job.
func imageTemplate(name string, src jobSource) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers:    []corev1.Container{{Name: name, Image: src.Image, Command: src.Command}},
		RestartPolicy: corev1.RestartPolicyNever,
	}}
}

func newJob(name string, src jobSource) *batchv1.Job {
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       batchv1.JobSpec{Template: imageTemplate(name, src)},
	}
}

// jobFromCronJob instantiates a batch/v1 CronJob's job template.
func jobFromCronJob(name string, cj *batchv1.CronJob) *batchv1.Job {
	owner := &metav1.OwnerReference{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "CronJob", Name: cj.Name, UID: cj.UID}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: manualMeta(name, cj.Spec.JobTemplate.ObjectMeta, owner),
		Spec:       cj.Spec.JobTemplate.Spec,
	}
}

func advancedCronJobOwner(acj *kruiseappsv1alpha1.AdvancedCronJob) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: kruiseappsv1alpha1.AdvancedCronJobKind, Name: acj.Name, UID: acj.UID}
}

// jobFromAdvancedCronJob instantiates the job template of an AdvancedCronJob that creates Jobs.
func jobFromAdvancedCronJob(name string, acj *kruiseappsv1alpha1.AdvancedCronJob) (*batchv1.Job, error) {
	tmpl := acj.Spec.Template.JobTemplate
	if tmpl == nil {
		return nil, fmt.Errorf("from must be a job template, but advancedcronjob %q has a broadcastJob template", acj.Name)
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: manualMeta(name, tmpl.ObjectMeta, advancedCronJobOwner(acj)),
		Spec:       tmpl.Spec,
	}, nil
}

func newBroadcastJob(name string, src jobSource) *kruiseappsv1alpha1.BroadcastJob {
	return &kruiseappsv1alpha1.BroadcastJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "BroadcastJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kruiseappsv1alpha1.BroadcastJobSpec{Template: imageTemplate(name, src)},
	}
}

// broadcastJobFromAdvancedCronJob instantiates the template of an AdvancedCronJob that creates BroadcastJobs.
func broadcastJobFromAdvancedCronJob(name string, acj *kruiseappsv1alpha1.AdvancedCronJob) (*kruiseappsv1alpha1.BroadcastJob, error) {
	tmpl := acj.Spec.Template.BroadcastJobTemplate
	if tmpl == nil {
		return nil, fmt.Errorf("from must be a broadcastJob template, but advancedcronjob %q has a job template", acj.Name)
	}
	return &kruiseappsv1alpha1.BroadcastJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "BroadcastJob"},
		ObjectMeta: manualMeta(name, tmpl.ObjectMeta, advancedCronJobOwner(acj)),
		Spec:       tmpl.Spec,
	}, nil
}

// crrOptions are the tunables of `create ContainerRecreateRequest`.
type crrOptions struct {
	Containers        []string
	UnreadyGraceSecs  int64
	MinStartedSeconds int32
}

// Defaults of `create ContainerRecreateRequest`, as upstream.
const (
	defaultCRRUnreadyGraceSeconds  = 3
	defaultCRRMinStartedSeconds    = 3
	defaultCRRActiveDeadline       = 300
	defaultCRRTTLSecondsAfterEnded = 1800
)

// newContainerRecreateRequest asks to recreate the chosen containers of pod (all without a choice),
// carrying their preStop hooks and ports as the API expects.
func newContainerRecreateRequest(name string, pod *corev1.Pod, o crrOptions) (*kruiseappsv1alpha1.ContainerRecreateRequest, error) {
	containers, err := crrContainers(pod, o.Containers)
	if err != nil {
		return nil, err
	}
	return &kruiseappsv1alpha1.ContainerRecreateRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "ContainerRecreateRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kruiseappsv1alpha1.ContainerRecreateRequestSpec{
			PodName:    pod.Name,
			Containers: containers,
			Strategy: &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{
				FailurePolicy:             kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyFail,
				UnreadyGracePeriodSeconds: ptr.To(o.UnreadyGraceSecs),
				MinStartedSeconds:         o.MinStartedSeconds,
			},
			ActiveDeadlineSeconds:   ptr.To[int64](defaultCRRActiveDeadline),
			TTLSecondsAfterFinished: ptr.To[int32](defaultCRRTTLSecondsAfterEnded),
		},
	}, nil
}

func crrContainers(pod *corev1.Pod, names []string) ([]kruiseappsv1alpha1.ContainerRecreateRequestContainer, error) {
	if len(pod.Spec.Containers) == 0 {
		return nil, fmt.Errorf("pod %q has no containers", pod.Name)
	}
	byName := map[string]corev1.Container{}
	var all []string
	for _, c := range pod.Spec.Containers {
		byName[c.Name] = c
		all = append(all, c.Name)
	}
	if len(names) == 0 {
		names = all
	}
	out := make([]kruiseappsv1alpha1.ContainerRecreateRequestContainer, 0, len(names))
	for _, n := range names {
		c, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("container %q not found in pod %q", n, pod.Name)
		}
		out = append(out, kruiseappsv1alpha1.ContainerRecreateRequestContainer{Name: n, PreStop: preStopOf(c), Ports: c.Ports})
	}
	return out, nil
}

func preStopOf(c corev1.Container) *kruiseappsv1alpha1.ProbeHandler {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return nil
	}
	h := c.Lifecycle.PreStop
	return &kruiseappsv1alpha1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}
}

// unstructuredOf converts a typed object for the dynamic client.
func unstructuredOf(obj runtime.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	return m, nil
}
