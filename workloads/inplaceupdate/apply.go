package inplaceupdate

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// ReasonStarted is the InPlaceUpdateReady condition's reason while an update runs (upstream's).
const ReasonStarted = "StartInPlaceUpdate"

// InjectGate adds the InPlaceUpdateReady readiness gate to a pod, once.
func InjectGate(pod *corev1.Pod) bool {
	return podcondition.AddGate(pod, kruiseappspub.InPlaceUpdateReady)
}

// HasGate reports whether the pod waits for the InPlaceUpdateReady condition.
func HasGate(pod *corev1.Pod) bool {
	return podcondition.HasGate(pod, kruiseappspub.InPlaceUpdateReady)
}

// Apply writes the update onto pod (the spec and metadata part of one pod patch): new images, template
// labels and annotations, and the inplace-update-state annotation that records the containers' image IDs
// so that completion can be told later. revision is the target revision's name.
func Apply(pod *corev1.Pod, s *Spec, revision string, now metav1.Time) error {
	if err := writeState(pod, s, revision, now); err != nil {
		return err
	}
	applySpec(pod, s)
	return nil
}

// writeState records the update in the inplace-update-state annotation.
func writeState(pod *corev1.Pod, s *Spec, revision string, now metav1.Time) error {
	state := kruiseappspub.InPlaceUpdateState{
		Revision:              revision,
		UpdateTimestamp:       now,
		LastContainerStatuses: lastStatuses(pod, s.ContainerImages),
		UpdateImages:          len(s.ContainerImages) > 0,
		UpdateEnvFromMetadata: len(s.EnvFromMetadata) > 0,
	}
	raw, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("encode %s: %w", kruiseappspub.InPlaceUpdateStateKey, err)
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kruiseappspub.InPlaceUpdateStateKey] = string(raw)
	return nil
}

// applySpec sets the new images and the template's label and annotation changes.
func applySpec(pod *corev1.Pod, s *Spec) {
	for i := range pod.Spec.Containers {
		if image, ok := s.ContainerImages[pod.Spec.Containers[i].Name]; ok {
			pod.Spec.Containers[i].Image = image
		}
	}
	pod.Labels = mergeInto(pod.Labels, s.Labels, s.RemovedLabels)
	pod.Annotations = mergeInto(pod.Annotations, s.Annotations, s.RemovedAnnotations)
}

func lastStatuses(pod *corev1.Pod, images map[string]string) map[string]kruiseappspub.InPlaceUpdateContainerStatus {
	last := map[string]kruiseappspub.InPlaceUpdateContainerStatus{}
	for _, cs := range pod.Status.ContainerStatuses {
		if _, ok := images[cs.Name]; ok {
			last[cs.Name] = kruiseappspub.InPlaceUpdateContainerStatus{ImageID: cs.ImageID}
		}
	}
	return last
}

func mergeInto(m, set map[string]string, removed []string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	for k, v := range set {
		m[k] = v
	}
	for _, k := range removed {
		delete(m, k)
	}
	return m
}
