// Package cacheindex reads a manager's cached pods through an index of their informer: the cache's own
// objects, without the list a client read builds and copies them into. A controller that reads every pod of a
// workload on each pod event otherwise spends most of its time, and makes most of its garbage, in those copies.
package cacheindex

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Pods reads pods by index key within a namespace. The pods it returns are shared with the cache: read-only.
type Pods struct {
	name string
	// indexer is the pod informer's; nil reads through client (and, with a name, its field index).
	indexer toolscache.Indexer
	client  client.Client
	// acrossNamespaces: the keys are not taken within the pod's namespace.
	acrossNamespaces bool
}

// IndexPods indexes the manager's pods under name by keys, which are taken within each pod's namespace. A cache
// whose informers expose no indexer gets a field index of the same name, read through the manager's client.
func IndexPods(mgr manager.Manager, name string, keys func(*corev1.Pod) []string) (*Pods, error) {
	return indexPods(mgr, name, keys, namespacedKeys(keys))
}

// IndexPodsAcrossNamespaces indexes the manager's pods under name by keys that mean the same in every
// namespace, such as the names of the cluster-scoped objects that own a part of them; Get reads every namespace
// when given "".
func IndexPodsAcrossNamespaces(mgr manager.Manager, name string, keys func(*corev1.Pod) []string) (*Pods, error) {
	pods, err := indexPods(mgr, name, keys, podKeys(keys))
	if pods != nil {
		pods.acrossNamespaces = true
	}
	return pods, err
}

// made holds the indexes made, by pod informer and name: the callers of one name share its index, which the
// first of them made with its key function.
var made = struct {
	sync.Mutex
	pods map[madeKey]*Pods
}{pods: map[madeKey]*Pods{}}

type madeKey struct {
	informer any
	name     string
}

func indexPods(mgr manager.Manager, name string, keys func(*corev1.Pod) []string, index toolscache.IndexFunc) (*Pods, error) {
	informer, err := mgr.GetCache().GetInformer(context.Background(), &corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("getting the pod informer: %w", err)
	}
	if !reflect.TypeOf(informer).Comparable() {
		return newIndex(mgr, informer, name, keys, index)
	}
	made.Lock()
	defer made.Unlock()
	key := madeKey{informer: informer, name: name}
	if p, ok := made.pods[key]; ok {
		return p, nil
	}
	p, err := newIndex(mgr, informer, name, keys, index)
	if err == nil {
		made.pods[key] = p
	}
	return p, err
}

func newIndex(mgr manager.Manager, informer cache.Informer, name string, keys func(*corev1.Pod) []string,
	index toolscache.IndexFunc) (*Pods, error) {
	if indexed, ok := informer.(interface{ GetIndexer() toolscache.Indexer }); ok {
		if err := informer.AddIndexers(toolscache.Indexers{name: index}); err != nil {
			return nil, fmt.Errorf("indexing pods by %s: %w", name, err)
		}
		return &Pods{name: name, indexer: indexed.GetIndexer()}, nil
	}
	fieldKeys := func(obj client.Object) []string {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil
		}
		return keys(pod)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, name, fieldKeys); err != nil {
		return nil, fmt.Errorf("indexing pods by %s: %w", name, err)
	}
	return &Pods{name: name, client: mgr.GetClient()}, nil
}

// FromIndexer reads an indexer that holds pods under name as IndexPods keys them, and by namespace.
func FromIndexer(indexer toolscache.Indexer, name string) *Pods {
	return &Pods{name: name, indexer: indexer}
}

// FromClient reads through a client: with a name, by the field index of that name (a fake client's WithIndex);
// without one, Get lists the namespace and ignores the key.
func FromClient(c client.Client, name string) *Pods {
	return &Pods{name: name, client: c}
}

// Indexers are the indexers an informer needs for FromIndexer: by namespace and by keys under name.
func Indexers(name string, keys func(*corev1.Pod) []string) toolscache.Indexers {
	return toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, name: namespacedKeys(keys)}
}

func namespacedKeys(keys func(*corev1.Pod) []string) toolscache.IndexFunc {
	return func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("indexing pods: got %T", obj)
		}
		out := keys(pod)
		for i, k := range out {
			out[i] = namespaced(pod.Namespace, k)
		}
		return out, nil
	}
}

func podKeys(keys func(*corev1.Pod) []string) toolscache.IndexFunc {
	return func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("indexing pods: got %T", obj)
		}
		return keys(pod), nil
	}
}

func namespaced(ns, key string) string {
	return ns + "/" + key
}

// Shallow copies the pods' structs into one new array, as a cache list does: a writer may then replace a pod's
// struct with the written pod without touching the cache (or its index, which would go stale). Maps and slices
// stay shared with the cache and must not be changed in place.
func Shallow(pods []*corev1.Pod) []*corev1.Pod {
	copies := make([]corev1.Pod, len(pods))
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		copies[i] = *p
		out[i] = &copies[i]
	}
	return out
}

// Get returns the pods of namespace ns (of every namespace for "", with keys across namespaces) indexed under
// key that sel (nil: every one) matches.
func (p *Pods) Get(ctx context.Context, ns, key string, sel labels.Selector) ([]*corev1.Pod, error) {
	if p.indexer == nil {
		var fields client.MatchingFields
		if p.name != "" {
			fields = client.MatchingFields{p.name: key}
		}
		return p.list(ctx, ns, sel, fields)
	}
	if p.acrossNamespaces {
		return p.byIndex(p.name, key, ns, sel)
	}
	return p.byIndex(p.name, namespaced(ns, key), ns, sel)
}

// InNamespace returns the pods of namespace ns that sel (nil: every one) matches.
func (p *Pods) InNamespace(ctx context.Context, ns string, sel labels.Selector) ([]*corev1.Pod, error) {
	if p.indexer == nil {
		return p.list(ctx, ns, sel, nil)
	}
	return p.byIndex(toolscache.NamespaceIndex, ns, ns, sel)
}

func (p *Pods) byIndex(index, value, ns string, sel labels.Selector) ([]*corev1.Pod, error) {
	objs, err := p.indexer.ByIndex(index, value)
	if err != nil {
		return nil, fmt.Errorf("reading pods by %s: %w", index, err)
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok && (ns == "" || pod.Namespace == ns) && (sel == nil || sel.Matches(labels.Set(pod.Labels))) {
			out = append(out, pod)
		}
	}
	return out, nil
}

func (p *Pods) list(ctx context.Context, ns string, sel labels.Selector, fields client.MatchingFields) ([]*corev1.Pod, error) {
	opts := []client.ListOption{client.InNamespace(ns), client.UnsafeDisableDeepCopy}
	if sel != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	if fields != nil {
		opts = append(opts, fields)
	}
	list := &corev1.PodList{}
	if err := p.client.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
