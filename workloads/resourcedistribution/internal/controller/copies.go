package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/resourcedistribution/internal/plan"
)

// controllerIndex indexes the copies by the name of the ResourceDistribution that controls them, so that a
// distribution finds its copies in namespaces it no longer targets without reading every namespace.
const controllerIndex = "resourcedistribution.flotilla.dev/controller"

// newCopyCache is the controller's own cache of Secrets and ConfigMaps, cluster-wide: the manager's caches
// ConfigMaps of one namespace only. It keeps the content of the distributions' copies and only the metadata
// of every other object (slim), which is all a conflict needs: other Secrets' data stays out of memory.
func newCopyCache(mgr ctrl.Manager) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(), DefaultTransform: slim,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the ResourceDistribution copies cache: %w", err)
	}
	for _, obj := range []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}} {
		if err := c.IndexField(context.Background(), obj, controllerIndex, controllerName); err != nil {
			return nil, fmt.Errorf("indexing the copies: %w", err)
		}
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the ResourceDistribution copies cache: %w", err)
	}
	return c, nil
}

func controllerName(obj client.Object) []string {
	if name := plan.Controller(obj); name != "" {
		return []string{name}
	}
	return nil
}

// slim drops managed fields from every cached object, and the content of those no ResourceDistribution
// controls.
func slim(in any) (any, error) {
	switch o := in.(type) {
	case *corev1.Secret:
		o.ManagedFields = nil
		if plan.Controller(o) == "" {
			o.Data, o.StringData = nil, nil
		}
	case *corev1.ConfigMap:
		o.ManagedFields = nil
		if plan.Controller(o) == "" {
			o.Data, o.BinaryData = nil, nil
		}
	}
	return in, nil
}

// copySource maps an edit or deletion of a copy to the ResourceDistribution that controls it. Creations are
// left out, as upstream leaves them: the controller makes them itself, and the cache's first listing would
// otherwise enqueue every distribution once per copy.
func copySource[T client.Object](mgr ctrl.Manager, c cache.Cache, obj T) source.TypedSource[reconcile.Request] {
	owner := handler.TypedEnqueueRequestForOwner[T](mgr.GetScheme(), mgr.GetRESTMapper(),
		&kruiseappsv1alpha1.ResourceDistribution{}, handler.OnlyControllerOwner())
	return source.Kind(c, obj, owner, predicate.TypedFuncs[T]{
		CreateFunc:  func(event.TypedCreateEvent[T]) bool { return false },
		GenericFunc: func(event.TypedGenericEvent[T]) bool { return false },
	})
}

// existing reads, for each target namespace that exists, the object named like the resource there, and
// the namespaces where that read failed.
func (r *Reconciler) existing(ctx context.Context, res *plan.Resource, targets []string,
	namespaces map[string]plan.Namespace) (map[string]client.Object, map[string]error) {
	found, failed := map[string]client.Object{}, map[string]error{}
	for _, ns := range targets {
		if _, ok := namespaces[ns]; !ok {
			continue
		}
		obj := newObject(res.Kind)
		err := r.copies.Get(ctx, types.NamespacedName{Namespace: ns, Name: res.Name()}, obj)
		switch {
		case err == nil:
			found[ns] = obj
		case !apierrors.IsNotFound(err):
			failed[ns] = err
		}
	}
	return found, failed
}

// owned lists the Secrets and ConfigMaps the ResourceDistribution named controls, in every namespace.
func (r *Reconciler) owned(ctx context.Context, name string) ([]client.Object, error) {
	secrets, configMaps := &corev1.SecretList{}, &corev1.ConfigMapList{}
	if err := r.copies.List(ctx, secrets, client.MatchingFields{controllerIndex: name}); err != nil {
		return nil, fmt.Errorf("list the Secrets of ResourceDistribution %s: %w", name, err)
	}
	if err := r.copies.List(ctx, configMaps, client.MatchingFields{controllerIndex: name}); err != nil {
		return nil, fmt.Errorf("list the ConfigMaps of ResourceDistribution %s: %w", name, err)
	}
	out := make([]client.Object, 0, len(secrets.Items)+len(configMaps.Items))
	for i := range secrets.Items {
		out = append(out, &secrets.Items[i])
	}
	for i := range configMaps.Items {
		out = append(out, &configMaps.Items[i])
	}
	return out, nil
}

func newObject(kind string) client.Object {
	if kind == plan.KindSecret {
		return &corev1.Secret{}
	}
	return &corev1.ConfigMap{}
}
