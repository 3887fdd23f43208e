package plan

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// A hot-upgrade sidecar runs as two containers: the working one and an idle one on the empty image. An
// update gives the idle one the new image and makes it the working one (its postStart hook takes the state
// over from the old one); once the pod is ready again, the old one is reset to the empty image.

// startHotUpgrade picks the container of hot-upgrade sidecar sc that gets the new image, records it as the
// working one with its version annotations, and returns its name. The idle container is picked; if an
// earlier upgrade was not reset yet, the one that is not ready, else the older one.
func startHotUpgrade(pod *corev1.Pod, set *kruiseappsv1alpha1.SidecarSet, sc *kruiseappsv1alpha1.SidecarContainer) string {
	working, idle := inject.HotUpgradeContainers(pod, sc.Name)
	if c := container(pod, idle); c != nil && c.Image != sc.UpgradeStrategy.HotUpgradeEmptyImage && readyContainer(pod, idle) &&
		(!readyContainer(pod, working) || version(pod, working) < version(pod, idle)) {
		working, idle = idle, working
	}
	if c := container(pod, idle); c == nil || c.Image == sc.Image {
		return idle
	}
	pod.Annotations[kruiseappsv1alpha1.SidecarSetVersionAnnotationKey(idle)] = set.ResourceVersion
	pod.Annotations[kruiseappsv1alpha1.SidecarSetVersionAltAnnotationKey(idle)] = pod.Annotations[kruiseappsv1alpha1.SidecarSetVersionAnnotationKey(working)]
	pod.Annotations[kruiseappsv1alpha1.SidecarSetVersionAltAnnotationKey(working)] = set.ResourceVersion
	records := inject.WorkingHotUpgradeContainers(pod)
	records[sc.Name] = idle
	inject.SetWorkingHotUpgradeContainers(pod, records)
	return idle
}

// hotUpgrading tells whether one of the set's hot-upgrade sidecars still runs its old version beside the
// new one: the container not working is not on the empty image.
func hotUpgrading(pod *corev1.Pod, set *kruiseappsv1alpha1.SidecarSet) bool {
	return slices.ContainsFunc(set.Spec.Containers, func(sc kruiseappsv1alpha1.SidecarContainer) bool {
		if !inject.IsHotUpgrade(&sc) {
			return false
		}
		_, idle := inject.HotUpgradeContainers(pod, sc.Name)
		c := container(pod, idle)
		return c != nil && c.Image != sc.UpgradeStrategy.HotUpgradeEmptyImage
	})
}

// toReset are the updated pods whose hot upgrade is through: the new containers run their image and every
// container but the old ones is ready, so the old ones can go back to the empty image.
func toReset(in Input) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range in.Pods {
		if inject.IsUpdated(pod, in.Set) && hotUpgrading(pod, in.Set) && consistent(pod, in.Set.Name) &&
			pod.Status.Phase == corev1.PodRunning && readyBesidesOld(pod, in.Set) {
			out = append(out, pod)
		}
	}
	return out
}

func readyBesidesOld(pod *corev1.Pod, set *kruiseappsv1alpha1.SidecarSet) bool {
	if podcondition.IsReady(pod) {
		return true
	}
	old := map[string]bool{}
	for i := range set.Spec.Containers {
		if sc := &set.Spec.Containers[i]; inject.IsHotUpgrade(sc) {
			_, idle := inject.HotUpgradeContainers(pod, sc.Name)
			old[idle] = true
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if !old[cs.Name] && !cs.Ready {
			return false
		}
	}
	return true
}

// ResetPod returns pod with the old containers of its finished hot upgrades back on the empty image and
// their versions zeroed, recording their image IDs so that the reset's completion can be told.
func ResetPod(pod *corev1.Pod, set *kruiseappsv1alpha1.SidecarSet, revision string, now metav1.Time) (*corev1.Pod, error) {
	out := pod.DeepCopy()
	last := map[string]kruiseappspub.InPlaceUpdateContainerStatus{}
	for i := range set.Spec.Containers {
		sc := &set.Spec.Containers[i]
		if !inject.IsHotUpgrade(sc) {
			continue
		}
		working, idle := inject.HotUpgradeContainers(out, sc.Name)
		c := container(out, idle)
		if c == nil || c.Image == sc.UpgradeStrategy.HotUpgradeEmptyImage {
			continue
		}
		c.Image = sc.UpgradeStrategy.HotUpgradeEmptyImage
		out.Annotations[kruiseappsv1alpha1.SidecarSetVersionAnnotationKey(idle)] = "0"
		out.Annotations[kruiseappsv1alpha1.SidecarSetVersionAltAnnotationKey(working)] = "0"
		if cs := podcondition.ContainerStatus(pod, idle); cs != nil {
			last[idle] = kruiseappspub.InPlaceUpdateContainerStatus{ImageID: cs.ImageID}
		}
	}
	err := recordState(out, set.Name, kruiseappspub.InPlaceUpdateState{Revision: revision, UpdateTimestamp: now,
		LastContainerStatuses: last, UpdateImages: len(last) > 0})
	return out, err
}

func readyContainer(pod *corev1.Pod, name string) bool {
	cs := podcondition.ContainerStatus(pod, name)
	return cs != nil && cs.Ready
}

// version is a container's hot-upgrade version annotation (the SidecarSet's resourceVersion when it got
// its image; 0 on the empty image).
func version(pod *corev1.Pod, name string) int64 {
	v, _ := strconv.ParseInt(pod.Annotations[kruiseappsv1alpha1.SidecarSetVersionAnnotationKey(name)], 10, 64)
	return v
}
