package cacheindex

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

const byTeam = "team"

func teamOf(p *corev1.Pod) []string {
	if t := p.Labels["team"]; t != "" {
		return []string{t}
	}
	return nil
}

// The informer's indexer and a client with a field index of the same name read the same pods: by key within
// the namespace, then by selector; or the whole namespace.
func TestPods(t *testing.T) {
	pod := func(ns, name, team, tier string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": team, "tier": tier}}}
	}
	pods := []*corev1.Pod{pod("ns", "a-web", "a", "web"), pod("ns", "a-db", "a", "db"), pod("ns", "b-web", "b", "web"),
		pod("other", "a-web", "a", "web")}
	web := labels.SelectorFromSet(labels.Set{"tier": "web"})
	readers := map[string]*Pods{"indexer": fromIndexer(t, pods), "client": fromClient(t, pods)}
	for name, r := range readers {
		for _, tt := range []struct {
			what string
			read func() ([]*corev1.Pod, error)
			want []string
		}{
			{"key", func() ([]*corev1.Pod, error) { return r.Get(context.Background(), "ns", "a", nil) }, []string{"a-db", "a-web"}},
			{"key and selector", func() ([]*corev1.Pod, error) { return r.Get(context.Background(), "ns", "a", web) }, []string{"a-web"}},
			{"unknown key", func() ([]*corev1.Pod, error) { return r.Get(context.Background(), "ns", "c", nil) }, nil},
			{"namespace and selector", func() ([]*corev1.Pod, error) { return r.InNamespace(context.Background(), "ns", web) }, []string{"a-web", "b-web"}},
		} {
			got, err := tt.read()
			if err != nil {
				t.Fatalf("%s, %s: %v", name, tt.what, err)
			}
			var names []string
			for _, p := range got {
				if p.Namespace != "ns" {
					t.Errorf("%s, %s: pod %s/%s from another namespace", name, tt.what, p.Namespace, p.Name)
				}
				names = append(names, p.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.want) {
				t.Errorf("%s, %s: %v, want %v", name, tt.what, names, tt.want)
			}
		}
	}
}

func fromIndexer(t *testing.T, pods []*corev1.Pod) *Pods {
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, Indexers(byTeam, teamOf))
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return FromIndexer(indexer, byTeam)
}

func fromClient(t *testing.T, pods []*corev1.Pod) *Pods {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&corev1.Pod{}, byTeam, func(obj client.Object) []string {
		return teamOf(obj.(*corev1.Pod))
	})
	for _, p := range pods {
		b = b.WithObjects(p.DeepCopy())
	}
	return FromClient(b.Build(), byTeam)
}

func TestShallowLeavesTheCacheAlone(t *testing.T) {
	cached := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1"}}
	copies := Shallow([]*corev1.Pod{cached})
	*copies[0] = corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "2"}}
	if cached.ResourceVersion != "1" || copies[0].ResourceVersion != "2" {
		t.Errorf("cached %s, copy %s: replacing the copy must leave the cached pod as it was", cached.ResourceVersion, copies[0].ResourceVersion)
	}
}

// Keys across namespaces: the indexer and a client's field index read one key's pods in every namespace, or in
// one.
func TestPodsAcrossNamespaces(t *testing.T) {
	pod := func(ns, name, team string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": team}}}
	}
	pods := []*corev1.Pod{pod("ns", "a1", "a"), pod("other", "a2", "a"), pod("ns", "b1", "b")}
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{byTeam: podKeys(teamOf)})
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	readers := map[string]*Pods{"indexer": {name: byTeam, indexer: indexer, acrossNamespaces: true}, "client": fromClient(t, pods)}
	for name, r := range readers {
		for ns, want := range map[string][]string{"": {"ns/a1", "other/a2"}, "other": {"other/a2"}} {
			got, err := r.Get(context.Background(), ns, "a", nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var keys []string
			for _, p := range got {
				keys = append(keys, p.Namespace+"/"+p.Name)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, want) {
				t.Errorf("%s, namespace %q: %v, want %v", name, ns, keys, want)
			}
		}
	}
}

// managerWithInformer serves a pod informer that is never run: all IndexPods touches.
type managerWithInformer struct {
	manager.Manager
	cache informerCache
}

func (m managerWithInformer) GetCache() cache.Cache { return m.cache }

type informerCache struct {
	cache.Cache
	informer toolscache.SharedIndexInformer
}

func (c informerCache) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return c.informer, nil
}

// Callers of one index name share one index: the second call neither fails nor adds another.
func TestIndexPodsOnceByName(t *testing.T) {
	informer := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.Pod{}, 0, toolscache.Indexers{})
	mgr := managerWithInformer{cache: informerCache{informer: informer}}
	first, err := IndexPods(mgr, byTeam, teamOf)
	if err != nil {
		t.Fatal(err)
	}
	second, err := IndexPods(mgr, byTeam, teamOf)
	if err != nil || second != first {
		t.Fatalf("second IndexPods = %p, %v; want the first's index %p", second, err, first)
	}
	if _, err := IndexPods(mgr, "other", teamOf); err != nil {
		t.Fatal(err)
	}
	if n := len(informer.GetIndexer().GetIndexers()); n != 2 {
		t.Errorf("the informer has %d indexers, want 2", n)
	}
}
