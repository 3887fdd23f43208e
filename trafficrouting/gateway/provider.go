// Package gateway routes a release through a Gateway API HTTPRoute: a weight splits each rule routing to the
// stable Service between it and the canary Service; matches add rules sending the matching requests to the
// canary alone (and take precedence over a weight, as upstream). A request header modifier applies to those
// canary rules only. Finalizing restores the route exactly (see OriginalWeightsAnnotation).
package gateway

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// Name is the provider's name in conditions and events.
const Name = "gateway"

// Factory builds the provider of a traffic routing that names an HTTPRoute. The client's scheme must hold the
// Gateway API v1 and v1beta1 types; mapper tells which of the two versions the cluster serves.
func Factory(c client.Client, mapper meta.RESTMapper) trafficrouting.Factory {
	return func(cfg trafficrouting.Config) (trafficrouting.Provider, error) {
		if cfg.Ref.Gateway == nil {
			return nil, nil
		}
		name := ptr.Deref(cfg.Ref.Gateway.HTTPRouteName, "")
		if name == "" {
			return nil, errors.New("gateway.httpRouteName is required")
		}
		if err := checkServices(cfg); err != nil {
			return nil, err
		}
		return &Provider{
			client:   c,
			mapper:   mapper,
			key:      types.NamespacedName{Namespace: cfg.Namespace, Name: name},
			backends: backends{namespace: cfg.Namespace, stable: cfg.StableService, canary: cfg.CanaryService},
		}, nil
	}
}

// checkServices: an HTTPRoute can only split traffic between two Services, so a release without a canary
// Service of its own (disableGenerateCanaryService) cannot use it.
func checkServices(cfg trafficrouting.Config) error {
	if cfg.StableService == "" || cfg.CanaryService == "" {
		return errors.New("the stable and canary Services must be named")
	}
	if cfg.CanaryService == cfg.StableService {
		return fmt.Errorf("an HTTPRoute needs a canary Service other than the stable Service %q", cfg.StableService)
	}
	return nil
}

// Provider changes one HTTPRoute.
type Provider struct {
	client   client.Client
	mapper   meta.RESTMapper
	key      types.NamespacedName
	backends backends
}

var _ trafficrouting.Provider = (*Provider)(nil)

// Name implements trafficrouting.Provider.
func (p *Provider) Name() string { return Name }

// Initialize checks that the HTTPRoute exists and routes to the stable Service.
func (p *Provider) Initialize(ctx context.Context) error {
	route, _, err := p.get(ctx)
	if err != nil {
		return err
	}
	if err := p.backends.check(stateOf(route)); err != nil {
		return fmt.Errorf("HTTPRoute %s: %w", p.key, err)
	}
	return nil
}

// EnsureRoutes implements trafficrouting.Provider.
func (p *Provider) EnsureRoutes(ctx context.Context, r trafficrouting.Routes) (bool, error) {
	return p.ensure(ctx, r)
}

// Finalize gives the HTTPRoute its original rules back; a route (or a Gateway API) that is gone has nothing
// left to restore.
func (p *Provider) Finalize(ctx context.Context) (bool, error) {
	done, err := p.ensure(ctx, trafficrouting.Stable())
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return true, nil
	}
	return done, err
}

// ensure writes the route when it does not route as r asks, re-reading it after a conflicting write.
func (p *Provider) ensure(ctx context.Context, r trafficrouting.Routes) (bool, error) {
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		route, obj, err := p.get(ctx)
		if err != nil {
			return err
		}
		wrote, err = p.write(ctx, route, obj, r)
		return err
	})
	return !wrote && err == nil, err
}

// write patches the route to the planned state, with an optimistic lock since the plan starts from what was read.
func (p *Provider) write(ctx context.Context, route *gatewayv1.HTTPRoute, obj client.Object, r trafficrouting.Routes) (bool, error) {
	cur := stateOf(route)
	want, err := plan(cur, p.backends, r)
	if err != nil {
		return false, fmt.Errorf("HTTPRoute %s: %w", p.key, err)
	}
	if want.equal(cur) {
		return false, nil
	}
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	want.applyTo(route)
	if err := p.client.Patch(ctx, obj, patch); err != nil {
		return false, fmt.Errorf("updating HTTPRoute %s: %w", p.key, err)
	}
	return true, nil
}

// get reads the route in the version the cluster serves; route and obj are the same object.
func (p *Provider) get(ctx context.Context) (*gatewayv1.HTTPRoute, client.Object, error) {
	version, err := servedVersion(p.mapper)
	if err != nil {
		return nil, nil, err
	}
	route, obj := newRoute(version)
	if err := p.client.Get(ctx, p.key, obj); err != nil {
		return nil, nil, fmt.Errorf("reading HTTPRoute %s: %w", p.key, err)
	}
	return route, obj, nil
}

func stateOf(route *gatewayv1.HTTPRoute) routeState {
	s := routeState{Rules: route.Spec.Rules}
	if v, ok := route.Annotations[OriginalWeightsAnnotation]; ok {
		s.Record = &v
	}
	return s
}

func (s routeState) applyTo(route *gatewayv1.HTTPRoute) {
	route.Spec.Rules = s.Rules
	if s.Record == nil {
		delete(route.Annotations, OriginalWeightsAnnotation)
		return
	}
	if route.Annotations == nil {
		route.Annotations = map[string]string{}
	}
	route.Annotations[OriginalWeightsAnnotation] = *s.Record
}
