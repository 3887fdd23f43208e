package plan

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// ReadyAndConsistent tells whether the pod is running and ready, the kubelet runs the images the set's
// last in-place update gave its sidecars, and no hot upgrade waits to be settled.
func ReadyAndConsistent(pod *corev1.Pod, set *kruiseappsv1alpha1.SidecarSet) bool {
	return pod.Status.Phase == corev1.PodRunning && podcondition.IsReady(pod) && consistent(pod, set.Name) &&
		!hotUpgrading(pod, set)
}

// consistent tells whether the kubelet runs the images the set's last in-place update gave the pod.
func consistent(pod *corev1.Pod, set string) bool {
	state, ok := UpdateStates(pod)[set]
	return !ok || inplaceupdate.ContainersRestarted(pod, state.LastContainerStatuses)
}

// UpdateStates reads kruise.io/sidecarset-inplace-update-state: per SidecarSet, the container statuses
// its last in-place update started from. A malformed annotation reads as empty.
func UpdateStates(pod *corev1.Pod) map[string]kruiseappspub.InPlaceUpdateState {
	out := map[string]kruiseappspub.InPlaceUpdateState{}
	if raw := pod.Annotations[kruiseappsv1alpha1.SidecarSetInplaceUpdateStateAnnotation]; raw != "" {
		if json.Unmarshal([]byte(raw), &out) != nil {
			return map[string]kruiseappspub.InPlaceUpdateState{}
		}
	}
	return out
}

// UpdatePod returns pod with the set's sidecar images and hashes, recording the containers' current
// image IDs so that completion can be told by their change. revision is the set's latest revision.
func UpdatePod(pod *corev1.Pod, set *kruiseappsv1alpha1.SidecarSet, revision string, now metav1.Time) (*corev1.Pod, error) {
	hash, err := inject.SetHash(set)
	if err != nil {
		return nil, err
	}
	shape, err := inject.SetHashWithoutImage(set)
	if err != nil {
		return nil, err
	}
	out := pod.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	last := map[string]kruiseappspub.InPlaceUpdateContainerStatus{}
	for i := range set.Spec.Containers {
		sc := &set.Spec.Containers[i]
		name := sc.Name
		if inject.IsHotUpgrade(sc) {
			name = startHotUpgrade(out, set, sc)
		}
		c := container(out, name)
		if c == nil || c.Image == sc.Image {
			continue
		}
		c.Image = sc.Image
		if cs := podcondition.ContainerStatus(pod, name); cs != nil {
			last[name] = kruiseappspub.InPlaceUpdateContainerStatus{ImageID: cs.ImageID}
		}
	}
	if err := recordState(out, set.Name, kruiseappspub.InPlaceUpdateState{Revision: revision,
		UpdateTimestamp: now, LastContainerStatuses: last, UpdateImages: len(last) > 0}); err != nil {
		return nil, err
	}
	stampHash(out, kruiseappsv1alpha1.SidecarSetHashAnnotation, set, hash, revision, now)
	stampHash(out, kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation, set, shape, "", now)
	return out, nil
}

func container(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers { // native sidecars run beside the app, so they update too
		if c := &pod.Spec.InitContainers[i]; c.Name == name && c.RestartPolicy != nil &&
			*c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return c
		}
	}
	return nil
}

func recordState(pod *corev1.Pod, set string, state kruiseappspub.InPlaceUpdateState) error {
	states := UpdateStates(pod)
	states[set] = state
	encoded, err := json.Marshal(states)
	if err != nil {
		return fmt.Errorf("recording the in-place update of pod %s: %w", pod.Name, err)
	}
	pod.Annotations[kruiseappsv1alpha1.SidecarSetInplaceUpdateStateAnnotation] = string(encoded)
	return nil
}

func stampHash(pod *corev1.Pod, key string, set *kruiseappsv1alpha1.SidecarSet, hash, revision string, now metav1.Time) {
	hashes := inject.PodHashes(pod, key)
	entry := hashes[set.Name]
	entry.SidecarSetName, entry.Hash, entry.UpdateTimestamp, entry.ControllerRevision = set.Name, hash, now, revision
	if entry.SidecarList == nil {
		entry.SidecarList = inject.SidecarContainerNames(set)
	}
	hashes[set.Name] = entry
	inject.SetPodHashes(pod, key, hashes)
}
