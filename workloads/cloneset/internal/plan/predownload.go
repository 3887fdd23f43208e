package plan

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
)

// Upstream's pre-download constants: small CloneSets pull on update anyway, and each job pulls once more
// on failure and is removed 10 minutes after it finished.
const (
	minReplicasToPreDownload  = 3
	defaultPreDownloadTimeout = 300
	preDownloadBackoffLimit   = 1
	preDownloadJobTTL         = 600
)

// PreDownload is the pre-download decision for an update revision.
type PreDownload struct {
	// Ignored says the revision is not worth pre-downloading (the revision is labelled so, once).
	Ignored bool
	// Wait says to wait for more updated ready pods (apps.kruise.io/image-predownload-min-updated-ready-pods).
	Wait bool
	// Jobs are the ImagePullJobs to create, one per changed container image.
	Jobs []*kruiseappsv1alpha1.ImagePullJob
}

// PlanPreDownload decides, for an in-place update from the current to the update revision, which images the
// nodes of the old pods should pull ahead of the update, as upstream does: not for ReCreate, 3 replicas or
// fewer, an update of every pod in one batch, or a change that cannot be made in place.
func PlanPreDownload(cs *kruiseappsv1alpha1.CloneSet, update *appsv1.ControllerRevision, oldT, newT *corev1.PodTemplateSpec) PreDownload {
	st := Resolve(cs)
	spec, inPlace := inplaceupdate.Calculate(oldT, newT)
	switch {
	case st.Type == kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType, st.Replicas <= minReplicasToPreDownload,
		st.Partition == 0 && st.MaxUnavailable >= st.Replicas, !inPlace, len(spec.ContainerImages) == 0:
		return PreDownload{Ignored: true}
	case cs.Status.UpdatedReadyReplicas < minUpdatedReady(cs, st.Replicas):
		return PreDownload{Wait: true}
	}
	jobs := make([]*kruiseappsv1alpha1.ImagePullJob, 0, len(spec.ContainerImages))
	for container, image := range spec.ContainerImages {
		jobs = append(jobs, preDownloadJob(cs, update, container, image))
	}
	return PreDownload{Jobs: jobs}
}

func minUpdatedReady(cs *kruiseappsv1alpha1.CloneSet, replicas int32) int32 {
	raw, ok := cs.Annotations[kruiseappsv1alpha1.ImagePreDownloadMinUpdatedReadyPods]
	if !ok {
		return 0
	}
	v := intstr.Parse(raw)
	return scaled(&v, replicas, true, zero)
}

// preDownloadJob is the job pulling image on the nodes of the pods not yet on the update revision. It is
// named after the revision and container, carries the template's labels (what a CloneSet owns matches its
// selector) and is owned by the CloneSet.
func preDownloadJob(cs *kruiseappsv1alpha1.CloneSet, update *appsv1.ControllerRevision, container, image string) *kruiseappsv1alpha1.ImagePullJob {
	labels := map[string]string{}
	for k, v := range cs.Spec.Template.Labels {
		labels[k] = v
	}
	hash := update.Labels[appsv1.ControllerRevisionHashLabelKey]
	labels[appsv1.ControllerRevisionHashLabelKey] = hash
	selector := cs.Spec.Selector.DeepCopy()
	selector.MatchExpressions = append(selector.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: appsv1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn, Values: []string{update.Name, hash}})
	var secrets []string
	for _, s := range cs.Spec.Template.Spec.ImagePullSecrets {
		secrets = append(secrets, s.Name)
	}
	return &kruiseappsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s", update.Name, container), Namespace: cs.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet"))}},
		Spec: kruiseappsv1alpha1.ImagePullJobSpec{Image: image, ImagePullJobTemplate: kruiseappsv1alpha1.ImagePullJobTemplate{
			PullSecrets: secrets,
			PodSelector: &kruiseappsv1alpha1.ImagePullJobPodSelector{LabelSelector: *selector},
			Parallelism: ptr.To(intstr.FromInt32(annotationInt(cs, kruiseappsv1alpha1.ImagePreDownloadParallelismKey, 1))),
			PullPolicy: &kruiseappsv1alpha1.PullPolicy{BackoffLimit: ptr.To[int32](preDownloadBackoffLimit),
				TimeoutSeconds: ptr.To(annotationInt(cs, kruiseappsv1alpha1.ImagePreDownloadTimeoutSecondsKey, defaultPreDownloadTimeout))},
			CompletionPolicy: kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Always, TTLSecondsAfterFinished: ptr.To[int32](preDownloadJobTTL)},
		}},
	}
}

// annotationInt reads a positive whole number from an annotation; a missing or bad value gives def.
func annotationInt(cs *kruiseappsv1alpha1.CloneSet, key string, def int32) int32 {
	v, err := strconv.ParseInt(cs.Annotations[key], 10, 32)
	if err != nil || v <= 0 {
		return def
	}
	return int32(v)
}
