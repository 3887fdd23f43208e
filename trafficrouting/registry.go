package trafficrouting

import (
	"context"
	"errors"
	"fmt"
)

// Factory builds the provider a Config asks for, or returns nil when the Config does not use it.
type Factory func(cfg Config) (Provider, error)

// Registry is the explicit, ordered list of provider factories the manager wires.
type Registry struct {
	factories []namedFactory
}

type namedFactory struct {
	name string
	new  Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Register adds a factory; providers are applied in registration order.
func (r *Registry) Register(name string, f Factory) {
	r.factories = append(r.factories, namedFactory{name: name, new: f})
}

// Empty reports whether no provider is registered.
func (r *Registry) Empty() bool { return r == nil || len(r.factories) == 0 }

// For builds every provider the Config uses, joined into one.
func (r *Registry) For(cfg Config) (Provider, error) {
	var all Composite
	for _, f := range r.factories {
		p, err := f.new(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s traffic routing: %w", f.name, err)
		}
		if p != nil {
			all = append(all, p)
		}
	}
	if len(all) == 0 {
		return nil, ErrNoProvider
	}
	return all, nil
}

// ErrNoProvider means the traffic routing names no network object any registered provider drives.
var ErrNoProvider = errors.New("the traffic routing names no ingress, gateway or custom network object")

// Composite applies several providers as one: every provider is called even when an earlier one is not done,
// so all of them converge in the same grace period.
type Composite []Provider

// Name implements Provider.
func (c Composite) Name() string { return "composite" }

// Initialize implements Provider.
func (c Composite) Initialize(ctx context.Context) error {
	for _, p := range c {
		if err := p.Initialize(ctx); err != nil {
			return fmt.Errorf("%s: %w", p.Name(), err)
		}
	}
	return nil
}

// EnsureRoutes implements Provider.
func (c Composite) EnsureRoutes(ctx context.Context, r Routes) (bool, error) {
	return c.each(func(p Provider) (bool, error) { return p.EnsureRoutes(ctx, r) })
}

// Finalize implements Provider.
func (c Composite) Finalize(ctx context.Context) (bool, error) {
	return c.each(func(p Provider) (bool, error) { return p.Finalize(ctx) })
}

func (c Composite) each(call func(Provider) (bool, error)) (bool, error) {
	all := true
	for _, p := range c {
		done, err := call(p)
		if err != nil {
			return false, fmt.Errorf("%s: %w", p.Name(), err)
		}
		all = all && done
	}
	return all, nil
}
