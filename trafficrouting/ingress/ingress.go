// Package ingress routes canary traffic through a second Ingress: "<ingress>-canary" carries the stable
// Ingress's rules for the stable Service, pointed at the canary Service, and annotations an ingress class's Lua
// script computes from the routes (nginx's canary-weight and canary-by-header, for instance).
package ingress

import (
	"context"
	"errors"
	"fmt"
	"maps"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	luaconfiguration "github.com/flotilla-dev/flotilla/lua_configuration"
	"github.com/flotilla-dev/flotilla/trafficrouting"
	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
)

// DefaultClass is the ingress class of a Rollout that names none.
const DefaultClass = "nginx"

// Factory builds the ingress provider of Rollouts whose traffic routing names an Ingress.
func Factory(c client.Client, vm *luavm.VM, overrides trafficrouting.ScriptOverrides) trafficrouting.Factory {
	return func(cfg trafficrouting.Config) (trafficrouting.Provider, error) {
		ing := cfg.Ref.Ingress
		if ing == nil {
			return nil, nil
		}
		if ing.Name == "" {
			return nil, errors.New("trafficRoutings[0].ingress.name is empty")
		}
		class := ing.ClassType
		if class == "" {
			class = DefaultClass
		}
		return &provider{c: c, vm: vm, overrides: overrides, cfg: cfg, name: ing.Name, class: class}, nil
	}
}

type provider struct {
	c         client.Client
	vm        *luavm.VM
	overrides trafficrouting.ScriptOverrides
	cfg       trafficrouting.Config
	name      string
	class     string
}

// Name implements trafficrouting.Provider.
func (p *provider) Name() string { return "ingress" }

func (p *provider) canaryName() string { return p.name + "-canary" }

// Initialize implements trafficrouting.Provider: the Ingress exists and its class's script runs, so a broken
// script is found before any pod of the release moves.
func (p *provider) Initialize(ctx context.Context) error {
	stable, err := p.stable(ctx)
	if err != nil {
		return err
	}
	_, err = p.annotations(ctx, stable.Annotations, trafficrouting.Stable())
	return err
}

// script is the class's script: the configuration ConfigMap's key first, then the built-in one.
func (p *provider) script(ctx context.Context) (string, error) {
	key := trafficrouting.IngressScriptKey(p.class)
	script, ok, err := p.overrides.Script(ctx, key)
	if err != nil || ok {
		return script, err
	}
	if script, ok := luaconfiguration.Ingress(p.class); ok {
		return script, nil
	}
	return "", fmt.Errorf("no Lua script for ingress class %q: none is built in and ConfigMap %s has no key %s",
		p.class, trafficrouting.ConfigurationName, key)
}

func (p *provider) stable(ctx context.Context) (*networkingv1.Ingress, error) {
	ing := &networkingv1.Ingress{}
	err := p.c.Get(ctx, client.ObjectKey{Namespace: p.cfg.Namespace, Name: p.name}, ing)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("trafficRoutings[0].ingress.name: Ingress %s/%s not found", p.cfg.Namespace, p.name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading Ingress %s/%s: %w", p.cfg.Namespace, p.name, err)
	}
	return ing, nil
}

// canary reads the canary Ingress; nil when there is none.
func (p *provider) canary(ctx context.Context) (*networkingv1.Ingress, error) {
	ing := &networkingv1.Ingress{}
	err := p.c.Get(ctx, client.ObjectKey{Namespace: p.cfg.Namespace, Name: p.canaryName()}, ing)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Ingress %s/%s: %w", p.cfg.Namespace, p.canaryName(), err)
	}
	return ing, nil
}

// EnsureRoutes implements trafficrouting.Provider. The canary Ingress is created routing nothing, so the
// ingress controller has picked up its backends before any traffic moves.
func (p *provider) EnsureRoutes(ctx context.Context, r trafficrouting.Routes) (bool, error) {
	canary, err := p.canary(ctx)
	if err != nil {
		return false, err
	}
	if canary == nil {
		return false, p.create(ctx)
	}
	want, err := p.annotations(ctx, canary.Annotations, r)
	if err != nil {
		return false, err
	}
	if maps.Equal(want, canary.Annotations) {
		return true, nil
	}
	return false, p.patchAnnotations(ctx, canary, want)
}

func (p *provider) create(ctx context.Context) error {
	stable, err := p.stable(ctx)
	if err != nil {
		return err
	}
	canary, err := newCanary(stable, p.canaryName(), p.cfg)
	if err != nil {
		return err
	}
	zero := int32(0)
	if canary.Annotations, err = p.annotations(ctx, canary.Annotations, trafficrouting.Routes{Weight: &zero}); err != nil {
		return err
	}
	if err := p.c.Create(ctx, canary); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Ingress %s/%s: %w", canary.Namespace, canary.Name, err)
	}
	return nil
}

// Finalize implements trafficrouting.Provider: the canary Ingress goes, the stable one was never changed.
func (p *provider) Finalize(ctx context.Context) (bool, error) {
	canary, err := p.canary(ctx)
	if err != nil || canary == nil {
		return err == nil, err
	}
	if !trafficrouting.OwnedBy(canary, p.cfg.Owner) {
		return true, nil
	}
	if err := p.c.Delete(ctx, canary); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("deleting Ingress %s/%s: %w", canary.Namespace, canary.Name, err)
	}
	return false, nil
}
