package admission

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// MinActiveDeadlineSeconds is the shortest activeDeadlineSeconds upstream accepts.
const MinActiveDeadlineSeconds = 3

var (
	specPath       = field.NewPath("spec")
	podNamePath    = specPath.Child("podName")
	containersPath = specPath.Child("containers")
	strategyPath   = specPath.Child("strategy")
)

var failurePolicies = []string{
	string(kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyFail),
	string(kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore),
}

// ValidateCreate checks a request being created, after Default, and its pod (nil when there is none named
// spec.podName): the pod must be active and on a node, and every container named once, present in the pod
// and started. The read-only container fields must be empty: the webhook copies them from the pod.
func ValidateCreate(crr *kruiseappsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) field.ErrorList {
	if crr == nil {
		return field.ErrorList{field.Required(specPath, "a ContainerRecreateRequest is required")}
	}
	errs := validateSpec(&crr.Spec)
	if !PodNameIsValid(crr.Spec.PodName) {
		return errs // already reported; no pod was looked up
	}
	if podErr := validatePod(crr.Spec.PodName, crr.Namespace, pod); podErr != nil {
		return append(errs, podErr)
	}
	return append(errs, validateContainersInPod(crr.Spec.Containers, pod)...)
}

// PodNameIsValid reports whether name can be a pod's, so that the webhook looks it up only then.
func PodNameIsValid(name string) bool {
	return name != "" && len(validation.IsDNS1123Subdomain(name)) == 0
}

func validateSpec(spec *kruiseappsv1alpha1.ContainerRecreateRequestSpec) field.ErrorList {
	var errs field.ErrorList
	switch {
	case spec.PodName == "":
		errs = append(errs, field.Required(podNamePath, "the pod whose containers are recreated"))
	case !PodNameIsValid(spec.PodName):
		for _, msg := range validation.IsDNS1123Subdomain(spec.PodName) {
			errs = append(errs, field.Invalid(podNamePath, spec.PodName, msg))
		}
	}
	errs = append(errs, validateContainers(spec.Containers)...)
	if d := spec.ActiveDeadlineSeconds; d != nil && *d < MinActiveDeadlineSeconds {
		errs = append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), *d,
			fmt.Sprintf("must be at least %d", MinActiveDeadlineSeconds)))
	}
	return append(errs, validateStrategy(spec.Strategy)...)
}

// validateContainers requires named, distinct containers. preStop, ports and statusContext are accepted
// whatever they hold: FillFromPod replaces them with the pod's, and upstream's kubectl-kruise sends the first
// two with every request it creates.
func validateContainers(containers []kruiseappsv1alpha1.ContainerRecreateRequestContainer) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(containersPath, "at least one container to recreate")}
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	for i := range containers {
		c, path := &containers[i], containersPath.Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(path.Child("name"), ""))
		case seen.Has(c.Name):
			errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
		}
		seen.Insert(c.Name)
	}
	return errs
}

func validateStrategy(s *kruiseappsv1alpha1.ContainerRecreateRequestStrategy) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if p := string(s.FailurePolicy); p != "" && p != failurePolicies[0] && p != failurePolicies[1] {
		errs = append(errs, field.NotSupported(strategyPath.Child("failurePolicy"), p, failurePolicies))
	}
	errs = append(errs, nonNegative(strategyPath.Child("terminationGracePeriodSeconds"), s.TerminationGracePeriodSeconds)...)
	return append(errs, nonNegative(strategyPath.Child("unreadyGracePeriodSeconds"), s.UnreadyGracePeriodSeconds)...)
}

func nonNegative(path *field.Path, v *int64) field.ErrorList {
	if v == nil || *v >= 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(path, *v, "must be greater than or equal to 0")}
}

// validatePod says why containers of pod cannot be recreated, nil if they can.
func validatePod(name, namespace string, pod *corev1.Pod) *field.Error {
	switch {
	case pod == nil:
		return field.Invalid(podNamePath, name, fmt.Sprintf("pod %q not found in namespace %q", name, namespace))
	case pod.DeletionTimestamp != nil:
		return field.Invalid(podNamePath, name, fmt.Sprintf("pod %q is being deleted", name))
	case isTerminal(pod) && !sidecarsTerminated(pod):
		return field.Invalid(podNamePath, name, fmt.Sprintf("pod %q has finished (phase %s)", name, pod.Status.Phase))
	case pod.Spec.NodeName == "":
		return field.Invalid(podNamePath, name, fmt.Sprintf("pod %q is not scheduled to a node yet", name))
	}
	return nil
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// SidecarTerminatedConditionType is the pod condition upstream's sidecar terminator sets on a finished pod
// before it asks, with a request, for the pod's sidecars to be stopped: such a pod is accepted.
const SidecarTerminatedConditionType corev1.PodConditionType = "SidecarTerminated"

func sidecarsTerminated(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == SidecarTerminatedConditionType {
			return true
		}
	}
	return false
}

// validateContainersInPod requires every named container in the pod's spec and started (with a
// containerID), so that the node agent can tell the recreated container from the one to stop.
func validateContainersInPod(containers []kruiseappsv1alpha1.ContainerRecreateRequestContainer, pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	for i := range containers {
		name := containers[i].Name
		if name == "" {
			continue
		}
		path := containersPath.Index(i).Child("name")
		switch status := podcondition.ContainerStatus(pod, name); {
		case podContainer(pod, name) == nil:
			errs = append(errs, field.Invalid(path, name, fmt.Sprintf("container %q not found in pod %q", name, pod.Name)))
		case status == nil:
			errs = append(errs, field.Invalid(path, name, fmt.Sprintf("container %q has no status in pod %q yet", name, pod.Name)))
		case status.ContainerID == "":
			errs = append(errs, field.Invalid(path, name, fmt.Sprintf("container %q of pod %q has not been created yet (no containerID)", name, pod.Name)))
		}
	}
	return errs
}

func podContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}
