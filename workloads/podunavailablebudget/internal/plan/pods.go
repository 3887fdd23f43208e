package plan

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// Active reports whether a pod still counts at all: not finished and not being deleted (kube's rule for a
// workload's pods).
func Active(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// Ready reports whether a pod serves: running, Ready, and not marked unavailable by an
// unavailable-pod.kruise.io/ label.
func Ready(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && podcondition.IsReady(pod) && !kruiseappspub.HasUnavailableLabel(pod.Labels)
}

// Consistent reports whether a pod runs what its spec says: no in-place update under way, and every container
// that names its image by digest reporting that digest. A slim cached pod (no images) has no digest to compare
// and is consistent unless an update is under way.
func Consistent(pod *corev1.Pod) bool {
	if done, err := inplaceupdate.Completed(pod); err != nil || !done {
		return false
	}
	return digestsMatch(pod)
}

// Available reports whether a pod counts as available to its budget.
func Available(pod *corev1.Pod) bool {
	return Active(pod) && Ready(pod) && Consistent(pod)
}

func digestsMatch(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		_, digest, ok := strings.Cut(c.Image, "@")
		if !ok {
			continue
		}
		s := podcondition.ContainerStatus(pod, c.Name)
		if s == nil || !strings.HasSuffix(s.ImageID, digest) {
			return false
		}
	}
	return true
}

// PodExemption says why a disruption of pod cannot cost its budget anything, or "" when it may: the pod opted out
// (pub.kruise.io/no-protect), is already going away, or is not available now.
func PodExemption(pod *corev1.Pod) string {
	switch {
	case noProtection(pod):
		return "the pod carries " + kruisepolicyv1alpha1.PodPubNoProtectionAnnotation
	case pod.DeletionTimestamp != nil:
		return "the pod is being deleted"
	case !Ready(pod):
		return "the pod is not ready"
	case !Consistent(pod):
		return "the pod does not run its spec yet"
	}
	return ""
}

func noProtection(pod *corev1.Pod) bool {
	on, err := strconv.ParseBool(pod.Annotations[kruisepolicyv1alpha1.PodPubNoProtectionAnnotation])
	return err == nil && on
}

// RelatedBudget is the name of the budget a pod's related-pub annotation names (either key), or "".
func RelatedBudget(pod *corev1.Pod) string {
	if name := pod.Annotations[kruisepolicyv1alpha1.PodRelatedPubAnnotation]; name != "" {
		return name
	}
	return pod.Annotations[kruisepolicyv1alpha1.PodRelatedPubAnnotationLegacy]
}

// UnavailableChanged reports whether an update of a pod can take it out of service: its spec changes, or it
// gains an unavailable-pod.kruise.io/ label.
func UnavailableChanged(old, updated *corev1.Pod) bool {
	if !equality.Semantic.DeepEqual(&old.Spec, &updated.Spec) {
		return true
	}
	return !kruiseappspub.HasUnavailableLabel(old.Labels) && kruiseappspub.HasUnavailableLabel(updated.Labels)
}
