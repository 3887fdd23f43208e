// Package predownload pulls a workload's new images ahead of its in-place update, as upstream's
// PreDownloadImageForInPlaceUpdate gate does: while the workload moves between revisions, ImagePullJobs pull the
// images the update changes on the nodes of the pods not yet updated, decided once per revision; once every pod
// runs one revision the jobs go. The pulling itself is the node agent's. A module says what its strategy is
// (Workload); the decision and the jobs are the same for every kind.
package predownload

import (
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
)

// Upstream's constants: small workloads pull on update anyway, and each job pulls once more on failure and is
// removed 10 minutes after it finished.
const (
	minReplicas     = 3
	defaultTimeout  = 300
	backoffLimit    = 1
	jobTTLAfterDone = 600
)

// Workload is what the decision reads of a workload.
type Workload struct {
	// Owner is the workload: it owns the jobs, its annotations tune them, and it gets the events.
	Owner client.Object
	Kind  schema.GroupVersionKind
	// Selector selects the workload's pods; Template is its current pod template (the jobs' labels, pull secrets).
	Selector *metav1.LabelSelector
	Template *corev1.PodTemplateSpec
	Replicas int32
	// InPlace says the strategy may update pods in place (upstream's ReCreate and OnDelete may not).
	InPlace bool
	// OneBatch says the update takes every pod at once (no partition, maxUnavailable covering the replicas).
	OneBatch bool
	// UpdatedReady counts the ready pods of the update revision.
	UpdatedReady int32
}

// Decision is what to do for an update revision.
type Decision struct {
	// Ignored says the revision is not worth pre-downloading (the revision is labelled so, once).
	Ignored bool
	// Wait says to wait for more updated ready pods (apps.kruise.io/image-predownload-min-updated-ready-pods).
	Wait bool
	// Jobs are the ImagePullJobs to create, one per changed container image.
	Jobs []*kruiseappsv1alpha1.ImagePullJob
}

// Plan decides, for an update from the template oldT to newT (the update revision's), which images the nodes of
// the old pods should pull ahead of it, as upstream does: none for a strategy that recreates pods, 3 replicas or
// fewer, an update of every pod in one batch, or a change that cannot be made in place.
func Plan(w Workload, update *appsv1.ControllerRevision, oldT, newT *corev1.PodTemplateSpec) Decision {
	spec, inPlace := inplaceupdate.Calculate(oldT, newT)
	switch {
	case !w.InPlace, w.Replicas <= minReplicas, w.OneBatch, !inPlace, len(spec.ContainerImages) == 0:
		return Decision{Ignored: true}
	case w.UpdatedReady < minUpdatedReady(w):
		return Decision{Wait: true}
	}
	jobs := make([]*kruiseappsv1alpha1.ImagePullJob, 0, len(spec.ContainerImages))
	for container, image := range spec.ContainerImages {
		jobs = append(jobs, job(w, update, container, image))
	}
	return Decision{Jobs: jobs}
}

// minUpdatedReady is apps.kruise.io/image-predownload-min-updated-ready-pods against the replicas, rounded up.
func minUpdatedReady(w Workload) int32 {
	raw, ok := w.Owner.GetAnnotations()[kruiseappsv1alpha1.ImagePreDownloadMinUpdatedReadyPods]
	if !ok {
		return 0
	}
	v := intstr.Parse(raw)
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, int(w.Replicas), true)
	if err != nil || n < 0 {
		return 0
	}
	return int32(min(n, 1<<30)) //nolint:gosec // bounded just above
}

// job pulls image on the nodes of the pods not yet on the update revision. It is named after the revision and
// container, carries the template's labels (what a workload owns matches its selector) and is owned by the
// workload.
func job(w Workload, update *appsv1.ControllerRevision, container, image string) *kruiseappsv1alpha1.ImagePullJob {
	labels := maps.Clone(w.Template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	hash := update.Labels[appsv1.ControllerRevisionHashLabelKey]
	labels[appsv1.ControllerRevisionHashLabelKey] = hash
	selector := w.Selector.DeepCopy()
	selector.MatchExpressions = append(selector.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: appsv1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn, Values: []string{update.Name, hash}})
	var secrets []string
	for _, s := range w.Template.Spec.ImagePullSecrets {
		secrets = append(secrets, s.Name)
	}
	annotations := w.Owner.GetAnnotations()
	return &kruiseappsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s", update.Name, container), Namespace: w.Owner.GetNamespace(),
			Labels: labels, OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(w.Owner, w.Kind)}},
		Spec: kruiseappsv1alpha1.ImagePullJobSpec{Image: image, ImagePullJobTemplate: kruiseappsv1alpha1.ImagePullJobTemplate{
			PullSecrets: secrets,
			PodSelector: &kruiseappsv1alpha1.ImagePullJobPodSelector{LabelSelector: *selector},
			Parallelism: ptr.To(intstr.FromInt32(annotationInt(annotations, kruiseappsv1alpha1.ImagePreDownloadParallelismKey, 1))),
			PullPolicy: &kruiseappsv1alpha1.PullPolicy{BackoffLimit: ptr.To[int32](backoffLimit),
				TimeoutSeconds: ptr.To(annotationInt(annotations, kruiseappsv1alpha1.ImagePreDownloadTimeoutSecondsKey, defaultTimeout))},
			CompletionPolicy: kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Always, TTLSecondsAfterFinished: ptr.To[int32](jobTTLAfterDone)},
		}},
	}
}

// annotationInt reads a positive whole number from an annotation; a missing or bad value gives def.
func annotationInt(annotations map[string]string, key string, def int32) int32 {
	v, err := strconv.ParseInt(annotations[key], 10, 32)
	if err != nil || v <= 0 {
		return def
	}
	return int32(v)
}
