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

// Readers are where the webhooks read Rollouts and a Deployment's ReplicaSets. Cached answers every request.
// Live, when set, is asked again when the cache shows nothing to hold a changed workload for: an informer may
// not have delivered yet the writes that came just before this request (a Rollout created a moment ago, a
// ReplicaSet a standby replica has not seen), and a revision let through unheld is rolled by the workload's
// own controller at once.
type Readers struct {
	Cached client.Reader
	Live   client.Reader
}

// RegisterWebhooks serves the Rollout validating webhook and the workload mutating webhooks on srv. scheme
// must know the rollouts.kruise.io v1alpha1 and v1beta1 kinds, apps/v1 and the apps.kruise.io v1alpha1 kinds.
// Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, readers Readers, scheme *runtime.Scheme, opts rolloutadmission.Options) error {
	if srv == nil || readers.Cached == nil || scheme == nil {
		return errors.New("registering the rollout webhooks: server, cached reader and scheme are required")
	}
	webhooks.Serve(srv, rolloutHandlers(readers, admission.NewDecoder(scheme), opts))
	return nil
}

// rolloutHandlers maps each path to its handler. The freezing webhooks see updates only: a release starts
// from a changed object.
func rolloutHandlers(readers Readers, decoder admission.Decoder, opts rolloutadmission.Options) map[string]admission.Handler {
	v := &rolloutValidator{reader: readers.Cached, decoder: decoder, opts: opts}
	m := &workloadMutator{Readers: readers, decoder: decoder}
	return map[string]admission.Handler{
		ValidateRolloutPath:         v,
		MutateDeploymentPath:        webhooks.UpdatesOnly(m.deployment),
		MutateCloneSetPath:          webhooks.UpdatesOnly(m.cloneSet),
		MutateAdvancedDaemonSetPath: webhooks.UpdatesOnly(m.advancedDaemonSet),
		MutateDaemonSetPath:         webhooks.UpdatesOnly(m.daemonSet),
		MutateUnifiedWorkloadPath:   webhooks.UpdatesOnly(m.unified),
	}
}
