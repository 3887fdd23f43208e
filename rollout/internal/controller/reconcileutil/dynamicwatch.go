package reconcileutil

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// DynamicWatches adds, the first time a release names it, a watch on a workload kind its controller was not
// set up with: a StatefulSet-like custom resource, which a Rollout may name while the workload-type filter is
// off. Without it, a change to such a workload would wake nothing.
type DynamicWatches struct {
	mu      sync.Mutex
	watched map[schema.GroupKind]bool
	ctrl    controller.Controller
	cache   cache.Cache
	mapper  meta.RESTMapper
	handler func(kind string) handler.EventHandler
}

// NewDynamicWatches serves ctrl, which watches the known kinds already; handler maps a kind's events to
// requests.
func NewDynamicWatches(ctrl controller.Controller, c cache.Cache, mapper meta.RESTMapper, known []schema.GroupKind,
	handler func(kind string) handler.EventHandler) *DynamicWatches {
	d := &DynamicWatches{watched: map[schema.GroupKind]bool{}, ctrl: ctrl, cache: c, mapper: mapper, handler: handler}
	for _, gk := range known {
		d.watched[gk] = true
	}
	return d
}

// Ensure watches ref's kind unless it is watched already. A kind the API server does not serve is left for
// later: the release reports its workload missing meanwhile.
func (d *DynamicWatches) Ensure(ref rolloutsv1beta1.ObjectRef) error {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || ref.Kind == "" {
		return nil //nolint:nilerr // admission reports a malformed reference; nothing to watch
	}
	gvk := gv.WithKind(ref.Kind)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.watched[gvk.GroupKind()] {
		return nil
	}
	if _, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		return nil //nolint:nilerr // not served (yet)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := d.ctrl.Watch(source.Kind(d.cache, client.Object(obj), d.handler(ref.Kind))); err != nil {
		return fmt.Errorf("watching %s: %w", gvk.GroupKind(), err)
	}
	d.watched[gvk.GroupKind()] = true
	return nil
}
