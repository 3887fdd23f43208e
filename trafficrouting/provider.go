package trafficrouting

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Provider changes one network object (or set of objects) so that it routes traffic as asked. Every method is
// idempotent: the engine calls them again on every reconcile until they report done.
type Provider interface {
	// Name identifies the provider in conditions and events ("ingress", "gateway", "custom").
	Name() string
	// Initialize checks that the objects the provider changes exist and can be changed.
	Initialize(ctx context.Context) error
	// EnsureRoutes makes the objects route as asked. It reports done when they already did, so a call that
	// changed something returns false and the engine waits the grace period before calling again.
	EnsureRoutes(ctx context.Context, r Routes) (done bool, err error)
	// Finalize removes every trace of the release: canary objects go, changed objects get their original
	// content back. It reports done when nothing was left to do.
	Finalize(ctx context.Context) (done bool, err error)
}

// Config is what a provider knows of the release; providers never read the Rollout itself.
type Config struct {
	// Namespace of the Rollout and of every object routed.
	Namespace string
	// Owner is the Rollout's controller reference; it owns every object a provider creates.
	Owner metav1.OwnerReference
	// StableService selects the stable pods; CanaryService the new ones (the same name when the Rollout
	// generates no canary Service).
	StableService string
	CanaryService string
	// Ref is the Rollout's trafficRoutings[0].
	Ref rolloutsv1beta1.TrafficRoutingRef
}
