package daemonset

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	daemonsetadmission "github.com/flotilla-dev/flotilla/workloads/daemonset/admission"
)

// Paths of the Advanced DaemonSet admission webhooks. The validating path is upstream's; upstream's mutating
// path already serves the Rollout engine's freezing webhook (rollout.MutateAdvancedDaemonSetPath), so
// defaulting has its own.
const (
	DefaultDaemonSetPath  = "/default-apps-kruise-io-v1alpha1-daemonset"
	ValidateDaemonSetPath = "/validate-apps-kruise-io-v1alpha1-daemonset"
)

// RegisterWebhooks serves the DaemonSet defaulting and validating webhooks on srv; scheme must know the
// apps.kruise.io v1alpha1 kinds. Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, scheme *runtime.Scheme) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the DaemonSet webhooks: server and scheme are required")
	}
	webhooks.Serve(srv, daemonSetHandlers(admission.NewDecoder(scheme)))
	return nil
}

func daemonSetHandlers(decoder admission.Decoder) map[string]admission.Handler {
	type ds = kruiseappsv1alpha1.DaemonSet
	return map[string]admission.Handler{
		DefaultDaemonSetPath:  webhooks.Defaulting(decoder, "DaemonSet", func(cur, _ *ds) { daemonsetadmission.Default(cur) }),
		ValidateDaemonSetPath: webhooks.Validating(decoder, "DaemonSet", daemonsetadmission.Validate),
	}
}
