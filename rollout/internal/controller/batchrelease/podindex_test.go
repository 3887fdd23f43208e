package batchrelease

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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
)

// Both readers return exactly the pods the selector alone selects in the namespace; the indexed one goes
// through the revision index when the selector requires a revision label it knows.
func TestUpdatedPods(t *testing.T) {
	pod := func(ns, name string, l map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}}
	}
	pods := []*corev1.Pod{
		pod("ns", "web-new", map[string]string{"app": "web", "pod-template-hash": "new"}),
		pod("ns", "web-old", map[string]string{"app": "web", "pod-template-hash": "old"}),
		pod("ns", "api-new", map[string]string{"app": "api", "pod-template-hash": "new"}),
		pod("ns", "sts-new", map[string]string{"app": "web", "controller-revision-hash": "web-new"}),
		pod("other", "web-new", map[string]string{"app": "web", "pod-template-hash": "new"}),
	}
	readers := map[string]*cacheindex.Pods{"indexed": indexedReader(t, pods), "listed": listedReader(t, pods)}
	tests := []struct {
		name     string
		selector string
		key      string
		want     []string
	}{
		{"a Deployment's update revision", "app=web,pod-template-hash=new", rolloutsv1beta1.PodTemplateHashLabelKey, []string{"web-new"}},
		{"a StatefulSet's update revision", "app=web,controller-revision-hash=web-new", rolloutsv1beta1.ControllerRevisionHashLabelKey, []string{"sts-new"}},
		{"a selector without the revision", "app=web", rolloutsv1beta1.PodTemplateHashLabelKey, []string{"sts-new", "web-new", "web-old"}},
		{"a revision key the index does not know", "app=web,pod-template-hash=new", "example.com/revision", []string{"web-new"}},
	}
	for _, tt := range tests {
		sel, err := labels.Parse(tt.selector)
		if err != nil {
			t.Fatal(err)
		}
		for name, reader := range readers {
			t.Run(tt.name+" "+name, func(t *testing.T) {
				got, err := updatedPods(context.Background(), reader, "ns", &control.WorkloadInfo{UpdatedPods: sel, RevisionLabelKey: tt.key})
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, p := range got {
					names = append(names, p.Name)
				}
				slices.Sort(names)
				if !slices.Equal(names, tt.want) {
					t.Errorf("read %v, want %v", names, tt.want)
				}
			})
		}
	}
}

// indexedReader is an informer's indexer as the manager's pod informer has it: by namespace and by revision.
func indexedReader(t *testing.T, pods []*corev1.Pod) *cacheindex.Pods {
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, cacheindex.Indexers(podRevisionIndex, podRevisions))
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return cacheindex.FromIndexer(indexer, podRevisionIndex)
}

func listedReader(t *testing.T, pods []*corev1.Pod) *cacheindex.Pods {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := make([]client.Object, len(pods))
	for i, p := range pods {
		objs[i] = p.DeepCopy()
	}
	return cacheindex.FromClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), "")
}
