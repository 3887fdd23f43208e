// Package podcache keeps a manager's pod cache small. Most pods of a cluster belong to native workloads, whose
// pods the manager's controllers read only by their metadata, node, IP and conditions (the Rollout engine
// counting ready pods of a batch, the native DaemonSet release replacing pods node by node); holding their
// containers, volumes and container statuses cost most of an idle manager's memory (a waiting container keeps
// only its reason, which a Rollout past its progress deadline names). Pods the Kruise workload modules manage,
// or a SidecarSet injected, keep everything: their controllers compare and update specs.
// So do pods with a container that asks the sidecar terminator to stop it (a Job's, mostly): the terminator
// reads their env and container statuses.
// Every pod keeps what the EphemeralJob controller reads of any pod it selects: its containers' names (an
// ephemeral container's must differ), and its ephemeral containers with their statuses (rare, and small); and
// its containers' ports, which a PodProbeMarker's probes may name.
// A pod whose containers wait on a launch barrier keeps everything until its launch completes: the container
// launch priority controller reads the containers' barrier env and ready statuses.
package podcache

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// slimOwners are the controllers whose pods are cached slim, by API group and kind.
var slimOwners = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "ReplicaSet"}:  true,
	{Group: "apps", Kind: "StatefulSet"}: true,
	{Group: "apps", Kind: "DaemonSet"}:   true,
	{Group: "batch", Kind: "Job"}:        true,
}

// Transform returns a cache transform for pods that applies next (nil: none) and then slims the pods of
// native workloads. Reads of a slim pod see empty containers: only patches computed from it are safe to send,
// never an update.
func Transform(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		if next != nil {
			var err error
			if obj, err = next(obj); err != nil {
				return obj, err
			}
		}
		if pod, ok := obj.(*corev1.Pod); ok && Slimmed(pod) {
			return slim(pod), nil
		}
		return obj, nil
	}
}

// Slimmed tells whether the cache holds pod slim.
func Slimmed(pod *corev1.Pod) bool {
	if _, injected := pod.Annotations[kruiseappsv1alpha1.SidecarSetHashAnnotation]; injected {
		return false
	}
	if launching(pod) {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && slimOwners[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}] && !hasTerminatedSidecar(pod)
}

// hasTerminatedSidecar tells whether a container of pod names the sidecar terminator in its env, whatever
// the value: the terminator decides, from the whole pod.
func hasTerminatedSidecar(pod *corev1.Pod) bool {
	for i := range pod.Spec.Containers {
		for _, e := range pod.Spec.Containers[i].Env {
			if e.Name == kruiseappsv1alpha1.KruiseTerminateSidecarEnv || e.Name == kruiseappsv1alpha1.KruiseTerminateSidecarWithImageEnv {
				return true
			}
		}
	}
	return false
}

// launching tells whether a container of pod waits on a launch barrier that is not completed: once the
// container launch priority controller marks the pod completed, it is slimmed like its siblings.
func launching(pod *corev1.Pod) bool {
	if pod.Annotations[kruiseappspub.ContainerLaunchPriorityCompletedKey] == "true" {
		return false
	}
	for i := range pod.Spec.Containers {
		for _, e := range pod.Spec.Containers[i].Env {
			if e.Name == kruiseappspub.ContainerLaunchBarrierEnvName {
				return true
			}
		}
	}
	return false
}

// slim is pod with what the manager reads of a native workload's pod: metadata, node, readiness gates,
// phase, conditions and IPs; the names and ports of its containers; its ephemeral containers and their
// statuses.
func slim(pod *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   pod.TypeMeta,
		ObjectMeta: sharedMeta(pod.ObjectMeta),
		Spec: corev1.PodSpec{
			NodeName: pod.Spec.NodeName, ReadinessGates: pod.Spec.ReadinessGates,
			InitContainers: namesAndPorts(pod.Spec.InitContainers), Containers: namesAndPorts(pod.Spec.Containers),
			EphemeralContainers: pod.Spec.EphemeralContainers,
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodPhase(str(string(pod.Status.Phase))), Conditions: sharedConditions(pod.Status.Conditions),
			PodIP: pod.Status.PodIP, PodIPs: pod.Status.PodIPs, HostIP: str(pod.Status.HostIP), StartTime: pod.Status.StartTime,
			EphemeralContainerStatuses: pod.Status.EphemeralContainerStatuses,
			InitContainerStatuses:      waitingOnly(pod.Status.InitContainerStatuses),
			ContainerStatuses:          waitingOnly(pod.Status.ContainerStatuses),
		},
	}
}

// waitingOnly keeps of container statuses only why a container waits (CrashLoopBackOff, ImagePullBackOff),
// which the Rollout engine names when a step's pods miss its progress deadline; nil when none waits.
func waitingOnly(statuses []corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, s := range statuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" {
			out = append(out, corev1.ContainerStatus{Name: s.Name,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: w.Reason}}})
		}
	}
	return out
}

// namesAndPorts is containers with nothing but their names and ports; nil for none. A corev1.Container is
// most of a kilobyte even empty, and the pods of a workload share their names and ports: one list per set of
// names and ports serves them all.
func namesAndPorts(containers []corev1.Container) []corev1.Container {
	if len(containers) == 0 {
		return nil
	}
	var key strings.Builder
	for _, c := range containers {
		key.WriteString(c.Name)
		for _, p := range c.Ports {
			fmt.Fprintf(&key, "\x01%s/%d/%s/%s/%d", p.Name, p.ContainerPort, p.Protocol, p.HostIP, p.HostPort)
		}
		key.WriteByte(0)
	}
	return names.get(key.String(), func() []corev1.Container {
		out := make([]corev1.Container, len(containers))
		for i, c := range containers {
			out[i] = corev1.Container{Name: c.Name, Ports: c.Ports}
		}
		return out
	})
}
