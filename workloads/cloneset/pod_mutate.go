package cloneset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// injectReadinessGate is the module's part of the pod webhook: it adds the KruisePodReady readiness gate to
// pods whose controller is an apps.kruise.io workload, so that pods created by another installation's
// controllers can be held not ready like Flotilla's own (which carry the gate from the start).
func injectReadinessGate(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if !podreadiness.InjectGate(pod) {
		return false, nil
	}
	logf.FromContext(ctx).V(1).Info("Adding the KruisePodReady readiness gate", "pod", klog.KObj(pod))
	return true, nil
}
