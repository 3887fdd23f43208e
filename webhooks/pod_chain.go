package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// MutatePodPath is upstream's path of the pod mutating webhook.
const MutatePodPath = "/mutate-pod"

// PodMutation changes a pod being created, in place, and reports whether it changed anything. It sees the
// changes of the mutations before it in the chain. An error refuses the pod with the error's message: a
// mutation that cannot decide (its cache failed, the pod's spec clashes with what it would add) must not let
// the pod through without what it owes it.
type PodMutation func(ctx context.Context, pod *corev1.Pod) (bool, error)

// PodChain gathers the modules' pod mutations at wiring time. Upstream has one pod webhook for everything
// that changes pods, so every module that does is served on MutatePodPath through one chain instead of a
// handler of its own. Mutations run in the order they were added: the order of the manager's module table,
// each module adding its own from its setup. The zero value is an empty chain.
type PodChain struct {
	mutations []PodMutation
}

// Add appends m to the chain. Call it before RegisterPodChain.
func (c *PodChain) Add(m PodMutation) {
	c.mutations = append(c.mutations, m)
}

// RegisterPodChain serves chain's mutations on MutatePodPath of srv, for pod creations only: what the modules
// set (readiness gates, for one) cannot change afterwards. An empty chain is not served, so a manager whose
// modules change no pod answers no pod webhook, and the configuration of an installation without them has
// none. scheme must know core/v1. Call it once, after the modules added their mutations and before the
// server starts.
func RegisterPodChain(srv webhook.Server, scheme *runtime.Scheme, chain *PodChain) error {
	if srv == nil || scheme == nil || chain == nil {
		return errors.New("registering the pod webhook: server, scheme and chain are required")
	}
	if len(chain.mutations) == 0 {
		return nil
	}
	h := &podChainHandler{decoder: admission.NewDecoder(scheme), mutations: slices.Clone(chain.mutations)}
	srv.Register(MutatePodPath, &webhook.Admission{Handler: CreatesOnly(h.mutate)})
	return nil
}

// podChainHandler answers the pod mutating webhook with the change of every mutation of its chain.
type podChainHandler struct {
	decoder   admission.Decoder
	mutations []PodMutation
}

func (h *podChainHandler) mutate(ctx context.Context, req admission.Request) admission.Response {
	cur := &corev1.Pod{}
	if err := h.decoder.DecodeRaw(req.Object, cur); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the pod: %w", err))
	}
	out := cur.DeepCopy()
	changed := false
	for _, m := range h.mutations {
		c, err := m(ctx, out)
		if err != nil {
			return admission.Denied(err.Error())
		}
		changed = c || changed
	}
	if !changed {
		return admission.Allowed("")
	}
	resp, err := PatchResponse(req.Object.Raw, cur, out)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("building the pod patch: %w", err))
	}
	return resp
}
