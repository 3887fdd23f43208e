package admission

import (
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Default applies upstream's defaults to a request being created: a strategy, and failurePolicy Fail. The
// grace period the pod's is copied in FillFromPod, which needs the pod.
func Default(crr *kruiseappsv1alpha1.ContainerRecreateRequest) {
	if crr == nil {
		return
	}
	if crr.Spec.Strategy == nil {
		crr.Spec.Strategy = &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{}
	}
	if crr.Spec.Strategy.FailurePolicy == "" {
		crr.Spec.Strategy.FailurePolicy = kruiseappsv1alpha1.DefaultContainerRecreateRequestFailurePolicy
	}
}
