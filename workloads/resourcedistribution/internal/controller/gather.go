package controller

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/resourcedistribution/internal/plan"
)

// gather reads what a reconcile of rd needs: its resource, the namespaces, the objects named like the
// resource in its targets and its copies anywhere. A resource or selector the webhook would have refused is a
// terminal error: only a new spec can fix it, and its change enqueues the distribution again.
func (r *Reconciler) gather(ctx context.Context, rd *kruiseappsv1alpha1.ResourceDistribution) (plan.Input, error) {
	res, err := plan.Decode(rd.Spec.Resource.Raw)
	if err != nil {
		return plan.Input{}, r.invalid(rd, fmt.Errorf("spec.resource: %w", err))
	}
	namespaces, err := r.namespaces(ctx)
	if err != nil {
		return plan.Input{}, err
	}
	targets, err := plan.Targets(&rd.Spec.Targets, namespaceList(namespaces))
	if err != nil {
		return plan.Input{}, r.invalid(rd, err)
	}
	existing, readFailed := r.existing(ctx, res, targets, namespaces)
	owned, err := r.owned(ctx, rd.Name)
	if err != nil {
		return plan.Input{}, err
	}
	return plan.Input{RD: rd, Resource: res, Namespaces: namespaces, Targets: targets, Existing: existing,
		ReadFailed: readFailed, Owned: owned, Now: r.Clock.Now()}, nil
}

// invalid records an invalid spec on the distribution and makes err terminal.
func (r *Reconciler) invalid(rd *kruiseappsv1alpha1.ResourceDistribution, err error) error {
	r.Recorder.Eventf(rd, nil, corev1.EventTypeWarning, "InvalidSpec", "Reconcile", "%v", err)
	return reconcile.TerminalError(err)
}

// namespaces are the cluster's namespaces, by name.
func (r *Reconciler) namespaces(ctx context.Context) (map[string]plan.Namespace, error) {
	list := &corev1.NamespaceList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	out := make(map[string]plan.Namespace, len(list.Items))
	for i := range list.Items {
		ns := toNamespace(&list.Items[i])
		out[ns.Name] = ns
	}
	return out, nil
}

func toNamespace(ns *corev1.Namespace) plan.Namespace {
	return plan.Namespace{Name: ns.Name, Labels: ns.Labels, Terminating: ns.DeletionTimestamp != nil}
}

func namespaceList(m map[string]plan.Namespace) []plan.Namespace {
	out := make([]plan.Namespace, 0, len(m))
	for ns := range maps.Values(m) {
		out = append(out, ns)
	}
	return out
}

// namespaceHandler maps a namespace event to the distributions whose targets it changes: on a new namespace,
// those that take it; on a changed one, those that take it now and did not (or the other way round), and
// those that take it once it starts terminating (it fails them now); on a namespace gone, those that took it.
func (r *Reconciler) namespaceHandler() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueFor(ctx, q, e.Object, nil)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueFor(ctx, q, e.ObjectNew, e.ObjectOld)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueFor(ctx, q, e.Object, nil)
		},
	}
}

// enqueueFor adds the distributions a namespace event concerns: those that take cur, or, when before is the
// namespace before an update, those whose choice changed or that take a namespace that began terminating.
func (r *Reconciler) enqueueFor(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], cur, before client.Object) {
	now, ok := cur.(*corev1.Namespace)
	if !ok {
		return
	}
	concern := func(t *kruiseappsv1alpha1.ResourceDistributionTargets) bool {
		return plan.Targeted(t, toNamespace(now))
	}
	if prev, ok := before.(*corev1.Namespace); ok {
		dying := prev.DeletionTimestamp == nil && now.DeletionTimestamp != nil
		concern = func(t *kruiseappsv1alpha1.ResourceDistributionTargets) bool {
			in := plan.Targeted(t, toNamespace(now))
			return in != plan.Targeted(t, toNamespace(prev)) || (dying && in)
		}
	}
	list := &kruiseappsv1alpha1.ResourceDistributionList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	for i := range list.Items {
		if rd := &list.Items[i]; concern(&rd.Spec.Targets) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rd)})
		}
	}
}
