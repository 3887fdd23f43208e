// Package predownload pulls a workload's new images ahead of its in-place update, as upstream's
// PreDownloadImageForInPlaceUpdate gate does: while the workload moves between revisions, ImagePullJobs pull the
// images the update changes on the nodes of the pods not yet updated, decided once per revision; once every pod
// runs one revision the jobs go. The pulling itself is the node agent's. A module says what its strategy allows
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

// MinReplicas: upstream's CloneSets and Advanced StatefulSets of at most this many replicas pull on update.
const MinReplicas = 3

// Upstream's job settings: each job pulls once more on failure and is removed 10 minutes after it finished.
const (
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
	// Replicas is what apps.kruise.io/image-predownload-min-updated-ready-pods scales against.
	Replicas int32
	// Skip says the strategy makes pre-downloading pointless: every pod updated in one batch, or (the module's
	// rules) pods recreated rather than updated in place, or too few of them.
	Skip bool
	// AnyChange pulls the images of an update that recreates pods too, as a DaemonSet's does: its new pod comes
	// back on the same node. Otherwise only an update made in place pre-downloads.
	AnyChange bool
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

// Plan decides, for an update from the templates olds (of the pods not yet updated; for an update made in
// place, the one current template) to newT (the update revision's), which images the nodes of the old pods
// should pull ahead of it, as upstream does: none when the strategy skips it, or for a change that cannot be
// made in place unless any change pulls.
func Plan(w Workload, update *appsv1.ControllerRevision, olds []*corev1.PodTemplateSpec, newT *corev1.PodTemplateSpec) Decision {
	images := changedImages(w.AnyChange, olds, newT)
	switch {
	case w.Skip, len(images) == 0:
		return Decision{Ignored: true}
	case w.UpdatedReady < minUpdatedReady(w):
		return Decision{Wait: true}
	}
	jobs := make([]*kruiseappsv1alpha1.ImagePullJob, 0, len(images))
	for container, image := range images {
		jobs = append(jobs, job(w, update, container, image))
	}
	return Decision{Jobs: jobs}
}

// changedImages are the images of newT's containers, by container, that the old pods do not run. Unless
// anyChange, the change must be one made in place from the one old template; otherwise a container counts
// when an old template lacks it or runs another image in it. Unknown templates give none.
func changedImages(anyChange bool, olds []*corev1.PodTemplateSpec, newT *corev1.PodTemplateSpec) map[string]string {
	if !anyChange {
		if len(olds) != 1 {
			return nil
		}
		spec, inPlace := inplaceupdate.Calculate(olds[0], newT)
		if !inPlace {
			return nil
		}
		return spec.ContainerImages
	}
	if newT == nil || len(olds) == 0 {
		return nil
	}
	images := map[string]string{}
	for _, c := range newT.Spec.Containers {
		for _, old := range olds {
			if old != nil && imageOf(old, c.Name) != c.Image {
				images[c.Name] = c.Image
			}
		}
	}
	return images
}

// imageOf is the image of t's container name, "" when t has none.
func imageOf(t *corev1.PodTemplateSpec, name string) string {
	for _, c := range t.Spec.Containers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
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
