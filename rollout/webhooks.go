package rollout

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	"github.com/flotilla-dev/flotilla/webhooks"
)

// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=rollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;watch

// Paths of the Rollout engine's admission webhooks; they are upstream's, so that webhook configurations
// written for Kruise Rollouts keep working.
const (
	ValidateRolloutPath         = "/validate-rollouts-kruise-io-rollout"
	MutateDeploymentPath        = "/mutate-apps-v1-deployment"
	MutateCloneSetPath          = "/mutate-apps-kruise-io-v1alpha1-cloneset"
	MutateAdvancedDaemonSetPath = "/mutate-apps-kruise-io-v1alpha1-daemonset"
	MutateDaemonSetPath         = "/mutate-apps-v1-daemonset"
	MutateUnifiedWorkloadPath   = "/mutate-unified-workload"
)

// RegisterWebhooks serves the Rollout validating webhook and the workload mutating webhooks on srv.
// reader lists the Rollouts of a namespace and a Deployment's ReplicaSets (a cache is fine: the decisions
// are level-based and the API server retries nothing on its own); scheme must know the rollouts.kruise.io
// v1alpha1 and v1beta1 kinds, apps/v1 and the apps.kruise.io v1alpha1 kinds. Call it once, before the
// server starts.
func RegisterWebhooks(srv webhook.Server, reader client.Reader, scheme *runtime.Scheme, opts rolloutadmission.Options) error {
	if srv == nil || reader == nil || scheme == nil {
		return errors.New("registering the rollout webhooks: server, reader and scheme are required")
	}
	webhooks.Serve(srv, rolloutHandlers(reader, admission.NewDecoder(scheme), opts))
	return nil
}

// rolloutHandlers maps each path to its handler. The freezing webhooks see updates only: a release starts
// from a changed object.
func rolloutHandlers(reader client.Reader, decoder admission.Decoder, opts rolloutadmission.Options) map[string]admission.Handler {
	v := &rolloutValidator{reader: reader, decoder: decoder, opts: opts}
	m := &workloadMutator{reader: reader, decoder: decoder}
	return map[string]admission.Handler{
		ValidateRolloutPath:         v,
		MutateDeploymentPath:        webhooks.UpdatesOnly(m.deployment),
		MutateCloneSetPath:          webhooks.UpdatesOnly(m.cloneSet),
		MutateAdvancedDaemonSetPath: webhooks.UpdatesOnly(m.advancedDaemonSet),
		MutateDaemonSetPath:         webhooks.UpdatesOnly(m.daemonSet),
		MutateUnifiedWorkloadPath:   webhooks.UpdatesOnly(m.unified),
	}
}
