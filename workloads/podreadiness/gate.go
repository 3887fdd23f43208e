package podreadiness

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// KruiseGroup is the API group whose workloads' pods carry the KruisePodReady gate.
const KruiseGroup = "apps.kruise.io"

// HasGate reports whether the pod declares the KruisePodReady readiness gate.
func HasGate(pod *corev1.Pod) bool { return podcondition.HasGate(pod, pub.KruisePodReadyConditionType) }

// AddGate adds the KruisePodReady readiness gate unless the pod declares it already.
func AddGate(pod *corev1.Pod) bool { return podcondition.AddGate(pod, pub.KruisePodReadyConditionType) }

// InjectGate adds the KruisePodReady readiness gate to a pod controlled by an apps.kruise.io workload, unless
// it is there already; it is the pod webhook's decision on CREATE.
func InjectGate(pod *corev1.Pod) bool {
	return OwnedByKruise(pod) && AddGate(pod)
}

// OwnedByKruise reports whether the pod's controller ownerReference is an apps.kruise.io object (any version).
func OwnedByKruise(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == KruiseGroup
}

// NeedsCondition reports whether the pod declares the gate but has no KruisePodReady condition yet; a pod
// being deleted is left alone.
func NeedsCondition(pod *corev1.Pod) bool {
	return pod != nil && pod.DeletionTimestamp == nil && HasGate(pod) && Condition(pod) == nil
}

// InitCondition adds the KruisePodReady condition, True with no holder, to a pod that NeedsCondition.
func InitCondition(pod *corev1.Pod, now metav1.Time) bool {
	if !NeedsCondition(pod) {
		return false
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
		Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue, LastTransitionTime: now,
	})
	return true
}
