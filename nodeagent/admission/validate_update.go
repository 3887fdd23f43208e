package admission

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const immutable = "field is immutable"

var (
	labelsPath      = field.NewPath("metadata", "labels")
	annotationsPath = field.NewPath("metadata", "annotations")
)

// ValidateUpdate refuses changes of what a request was created with: its spec, the pod-uid and node-name
// labels the node agent selects on, and the unready-acquired annotation once set (the node agent counts the
// grace period from it). Status, the active label and the other metadata stay free.
func ValidateUpdate(crr, old *kruiseappsv1alpha1.ContainerRecreateRequest) field.ErrorList {
	if crr == nil || old == nil {
		return field.ErrorList{field.Required(specPath, "a ContainerRecreateRequest is required")}
	}
	errs := immutableSpec(&crr.Spec, &old.Spec)
	for _, key := range []string{kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey, kruiseappsv1alpha1.ContainerRecreateRequestNodeNameKey} {
		if crr.Labels[key] != old.Labels[key] {
			errs = append(errs, field.Forbidden(labelsPath.Key(key), immutable))
		}
	}
	key := kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey
	if was := old.Annotations[key]; was != "" && crr.Annotations[key] != was {
		errs = append(errs, field.Forbidden(annotationsPath.Key(key), immutable+" once set"))
	}
	return errs
}

// immutableSpec names each changed field of the spec, down to the container.
func immutableSpec(spec, old *kruiseappsv1alpha1.ContainerRecreateRequestSpec) field.ErrorList {
	var errs field.ErrorList
	changed := func(path *field.Path, a, b any) {
		if !apiequality.Semantic.DeepEqual(a, b) {
			errs = append(errs, field.Forbidden(path, immutable))
		}
	}
	changed(podNamePath, spec.PodName, old.PodName)
	if len(spec.Containers) != len(old.Containers) {
		changed(containersPath, spec.Containers, old.Containers)
	} else {
		for i := range spec.Containers {
			changed(containersPath.Index(i), spec.Containers[i], old.Containers[i])
		}
	}
	changed(strategyPath, spec.Strategy, old.Strategy)
	changed(specPath.Child("activeDeadlineSeconds"), spec.ActiveDeadlineSeconds, old.ActiveDeadlineSeconds)
	changed(specPath.Child("ttlSecondsAfterFinished"), spec.TTLSecondsAfterFinished, old.TTLSecondsAfterFinished)
	return errs
}
