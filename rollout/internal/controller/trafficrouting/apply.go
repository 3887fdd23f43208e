package trafficrouting

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// errNoProviders: the manager runs no traffic provider, so nothing can be routed or restored.
var errNoProviders = errors.New("no traffic routing provider runs in this manager")

// run makes the provider call of a stage.
func (r *Reconciler) run(ctx context.Context, tr *rolloutsv1alpha1.TrafficRouting, c call, routes trafficrouting.Routes, routesErr error) Outcome {
	if c == callNone {
		return Outcome{Done: true}
	}
	p, err := r.providers(tr)
	if err != nil {
		return Outcome{Err: err, Invalid: true}
	}
	switch c {
	case callInitialize:
		return outcome(true, p.Initialize(ctx))
	case callFinalize:
		return outcome(p.Finalize(ctx))
	default:
		return ensure(ctx, p, routes, routesErr)
	}
}

// providers builds the providers of objectRef[0]; every error is one of the spec.
func (r *Reconciler) providers(tr *rolloutsv1alpha1.TrafficRouting) (trafficrouting.Provider, error) {
	if r.Traffic.Empty() {
		return nil, errNoProviders
	}
	cfg, err := providerConfig(tr)
	if err != nil {
		return nil, err
	}
	p, err := r.Traffic.For(cfg)
	if err != nil {
		return nil, fmt.Errorf("objectRef[0]: %w", err)
	}
	return p, nil
}

// ensure routes spec.strategy; a strategy that routes nothing keeps (or puts back) the original routes.
func ensure(ctx context.Context, p trafficrouting.Provider, routes trafficrouting.Routes, routesErr error) Outcome {
	if routesErr != nil {
		return Outcome{Err: routesErr, Invalid: true}
	}
	if routesNothing(routes) {
		return outcome(p.Finalize(ctx))
	}
	if err := p.Initialize(ctx); err != nil {
		return Outcome{Err: err}
	}
	return outcome(p.EnsureRoutes(ctx, routes))
}

func outcome(done bool, err error) Outcome {
	return Outcome{Done: done && err == nil, Err: err}
}

// apply carries out a decision: status first, so it never lags behind what the events tell, then events, then
// the finalizer, whose removal may let the object go.
func (r *Reconciler) apply(ctx context.Context, tr *rolloutsv1alpha1.TrafficRouting, d Decision) error {
	if err := r.writeStatus(ctx, tr, d.Status); err != nil {
		return err
	}
	for _, e := range d.Events {
		r.Recorder.Eventf(tr, nil, e.Type, e.Reason, "Reconcile", "%s", e.Note)
	}
	if !d.RemoveFinalizer {
		return nil
	}
	r.changes.Forget(tr.UID)
	return r.removeFinalizer(ctx, tr)
}

// writeStatus writes a changed status with an update guarded by resourceVersion, so a status written by
// someone else since the read is never overwritten.
func (r *Reconciler) writeStatus(ctx context.Context, tr *rolloutsv1alpha1.TrafficRouting, st rolloutsv1alpha1.TrafficRoutingStatus) error {
	if equality.Semantic.DeepEqual(tr.Status, st) {
		return nil
	}
	tr.Status = st
	if err := r.Client.Status().Update(ctx, tr); err != nil {
		return fmt.Errorf("writing status of TrafficRouting %s/%s: %w", tr.Namespace, tr.Name, err)
	}
	return nil
}

// addFinalizer adds the TrafficRouting's own finalizer. Rollouts add and remove finalizers of their own on the
// same list; reconcileutil guards the patch by resourceVersion so none of theirs is dropped.
func (r *Reconciler) addFinalizer(ctx context.Context, tr *rolloutsv1alpha1.TrafficRouting) error {
	return reconcileutil.EnsureFinalizer(ctx, r.Client, tr, rolloutsv1beta1.TrafficRoutingFinalizer)
}

func (r *Reconciler) removeFinalizer(ctx context.Context, tr *rolloutsv1alpha1.TrafficRouting) error {
	return reconcileutil.RemoveFinalizer(ctx, r.Client, tr, rolloutsv1beta1.TrafficRoutingFinalizer)
}
