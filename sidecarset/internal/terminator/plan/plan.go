// Package plan decides, for one pod, what the sidecar terminator does: which sidecar containers of a Job-like
// pod to stop through a ContainerRecreateRequest once its main containers have finished, as upstream
// OpenKruise's SidecarTerminator does. It reads only the pod.
//
// A container whose env sets KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT to "true" (any case) is a sidecar to stop;
// one that sets KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE is a sidecar too (never a main container),
// but is stopped only on virtual-kubelet nodes, which this terminator does not serve. Every other container of
// spec.containers is a main container; init containers take no part.
package plan

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// SidecarTerminatedCondition is the pod condition set when the terminator ends a pod's phase itself (upstream's).
const SidecarTerminatedCondition corev1.PodConditionType = "SidecarTerminated"

// role is what a container is to the terminator.
type role int

const (
	main role = iota
	// stopped sidecars are stopped through a request; the pod's phase then follows their exit codes.
	stopped
	// ignoreExitCode sidecars are stopped after the pod's phase was set from the main containers alone.
	ignoreExitCode
	// imageSwapped sidecars are stopped only on virtual-kubelet nodes; here they are neither main nor stopped.
	imageSwapped
)

// Decision is what to do for one pod. The zero Decision does nothing.
type Decision struct {
	// Stop are the sidecars to stop, by name, sorted; empty: none now.
	Stop []string
	// Phase, when set, is the terminal phase to write on the pod, with SidecarTerminatedCondition, before the
	// sidecars that ignore their exit code are stopped.
	Phase corev1.PodPhase
}

// Decide is what the terminator does for pod now. It acts only on a pod that runs (not pending, not being
// deleted), may finish (restartPolicy Never or OnFailure), has sidecars not yet finished, and whose main
// containers are done: all exited under Never, all exited with code 0 under OnFailure.
func Decide(pod *corev1.Pod) Decision {
	if !Candidate(pod) || !mainsDone(pod) {
		return Decision{}
	}
	running := func(r role) []string { return unfinished(pod, r) }
	if stop := running(stopped); len(stop) > 0 {
		return Decision{Stop: startedOrNone(pod, stop)}
	}
	stop := running(ignoreExitCode)
	if len(stop) == 0 || len(running(imageSwapped)) > 0 {
		return Decision{} // as upstream, the phase is set only once every other sidecar has finished
	}
	d := Decision{Stop: startedOrNone(pod, stop)}
	if !terminal(pod) {
		d = Decision{Phase: corev1.PodFailed}
		if finished(pod, roleNames(pod, main), true) {
			d.Phase = corev1.PodSucceeded
		}
	}
	return d
}

// Candidate tells whether pod may need the terminator at all, from its spec and phase; Decide is exact.
// It needs the pod's container env and statuses.
func Candidate(pod *corev1.Pod) bool {
	switch {
	case pod.DeletionTimestamp != nil, pod.Status.Phase == corev1.PodPending:
		return false
	case pod.Spec.RestartPolicy != corev1.RestartPolicyNever && pod.Spec.RestartPolicy != corev1.RestartPolicyOnFailure:
		return false
	}
	sidecars := slices.Concat(roleNames(pod, stopped), roleNames(pod, ignoreExitCode), roleNames(pod, imageSwapped))
	return len(sidecars) > 0 && !finished(pod, sidecars, false)
}

// mainsDone: under Never a main container is done once it exited, under OnFailure once it exited with 0
// (the kubelet restarts it otherwise).
func mainsDone(pod *corev1.Pod) bool {
	return finished(pod, roleNames(pod, main), pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure)
}

// finished tells whether every named container has terminated (with code 0 when succeeded is set). A pod
// whose statuses do not cover all its containers yet has not finished anything.
func finished(pod *corev1.Pod, names []string, succeeded bool) bool {
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, s := range pod.Status.ContainerStatuses {
		if !slices.Contains(names, s.Name) {
			continue
		}
		if t := s.State.Terminated; t == nil || (succeeded && t.ExitCode != 0) {
			return false
		}
	}
	return true
}

// unfinished are the containers of role r that have not terminated, sorted.
func unfinished(pod *corev1.Pod, r role) []string {
	var out []string
	for _, name := range roleNames(pod, r) {
		if s := status(pod, name); s == nil || s.State.Terminated == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// startedOrNone is names when every one of them has been created (the request names running containers:
// the API refuses one without a container ID); nil until then, for the pod's next status change.
func startedOrNone(pod *corev1.Pod, names []string) []string {
	for _, name := range names {
		if s := status(pod, name); s == nil || s.ContainerID == "" {
			return nil
		}
	}
	return names
}

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func status(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// roleNames are the names of pod's containers of role r.
func roleNames(pod *corev1.Pod, r role) []string {
	var out []string
	for i := range pod.Spec.Containers {
		if roleOf(&pod.Spec.Containers[i]) == r {
			out = append(out, pod.Spec.Containers[i].Name)
		}
	}
	return out
}

func roleOf(c *corev1.Container) role {
	switch {
	case envIs(c, kruiseappsv1alpha1.KruiseTerminateSidecarEnv, isTrue):
		if envIs(c, kruiseappsv1alpha1.KruiseIgnoreContainerExitCodeEnv, isTrue) {
			return ignoreExitCode
		}
		return stopped
	case envIs(c, kruiseappsv1alpha1.KruiseTerminateSidecarWithImageEnv, func(v string) bool { return v != "" }):
		return imageSwapped
	}
	return main
}

func isTrue(v string) bool { return strings.EqualFold(v, "true") }

func envIs(c *corev1.Container, name string, match func(string) bool) bool {
	for _, e := range c.Env {
		if e.Name == name && match(e.Value) {
			return true
		}
	}
	return false
}

// RequestName is the name of the pod's request (upstream's): one per pod, so that a request already made is
// found again rather than repeated.
func RequestName(pod *corev1.Pod) string {
	return fmt.Sprintf("sidecar-termination-%s", pod.UID)
}

// Request is the ContainerRecreateRequest that stops the named sidecars of pod, owned by the pod (it goes
// with the pod). Upstream's strategy: stop every container even if it was recreated meanwhile, and carry on
// past a container that fails to stop.
func Request(pod *corev1.Pod, sidecars []string) *kruiseappsv1alpha1.ContainerRecreateRequest {
	containers := make([]kruiseappsv1alpha1.ContainerRecreateRequestContainer, len(sidecars))
	for i, name := range sidecars {
		containers[i] = kruiseappsv1alpha1.ContainerRecreateRequestContainer{Name: name}
	}
	return &kruiseappsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pod.Namespace, Name: RequestName(pod),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: kruiseappsv1alpha1.ContainerRecreateRequestSpec{
			PodName:    pod.Name,
			Containers: containers,
			Strategy: &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{
				ForceRecreate: true,
				FailurePolicy: kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore,
			},
		},
	}
}
