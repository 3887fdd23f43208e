package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// MutatePodPath is upstream's path of the pod mutating webhook.
const MutatePodPath = "/mutate-pod"

// RegisterPodWebhook serves the pod mutating webhook on srv: on CREATE it adds the KruisePodReady readiness
// gate to pods whose controller is an apps.kruise.io workload, so that pods created by another installation's
// controllers can be held not ready like Flotilla's own (which carry the gate from the start). scheme must
// know core/v1. Call it once, before the server starts.
func RegisterPodWebhook(srv webhook.Server, scheme *runtime.Scheme) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the pod webhook: server and scheme are required")
	}
	m := &podMutator{decoder: admission.NewDecoder(scheme)}
	// Creations only: the gate can only be set at creation, readiness gates being immutable afterwards.
	srv.Register(MutatePodPath, &webhook.Admission{Handler: CreatesOnly(m.injectGate)})
	return nil
}

// podMutator answers the pod mutating webhook.
type podMutator struct {
	decoder admission.Decoder
}

func (m *podMutator) injectGate(ctx context.Context, req admission.Request) admission.Response {
	cur := &corev1.Pod{}
	if err := m.decoder.DecodeRaw(req.Object, cur); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the pod: %w", err))
	}
	out := cur.DeepCopy()
	if !podreadiness.InjectGate(out) {
		return admission.Allowed("")
	}
	mutated, err := MergeIntoRaw(req.Object.Raw, cur, out)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("building the pod patch: %w", err))
	}
	logf.FromContext(ctx).V(1).Info("Adding the KruisePodReady readiness gate", "pod", klog.KObj(out))
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}
