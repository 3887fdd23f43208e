package batchrelease

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
)

// podReader reads the pods of a workload's update revision. The pods are the cache's own objects, shared and
// read-only: a release reads them on every pod event, up to every pod of the workload each time.
type podReader interface {
	updatedPods(ctx context.Context, ns string, info *control.WorkloadInfo) ([]*corev1.Pod, error)
}

// podRevisionIndex indexes pods by namespace and revision label ("<ns>/pod-template-hash=<hash>",
// "<ns>/controller-revision-hash=<name>"), so that a release reads the pods of its update revision without
// matching its selector against every pod of the namespace.
const podRevisionIndex = "flotilla-pod-revision"

var revisionLabelKeys = []string{rolloutsv1beta1.PodTemplateHashLabelKey, rolloutsv1beta1.ControllerRevisionHashLabelKey}

func podRevisionKeys(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("indexing pods: got %T", obj)
	}
	var out []string
	for _, key := range revisionLabelKeys {
		if v := pod.Labels[key]; v != "" {
			out = append(out, revisionKey(pod.Namespace, key, v))
		}
	}
	return out, nil
}

func revisionKey(ns, key, value string) string {
	return ns + "/" + key + "=" + value
}

// newPodReader reads pods straight from the manager's pod informer, through podRevisionIndex; a cache whose
// informers expose no indexer is read through the client instead.
func newPodReader(mgr manager.Manager) (podReader, error) {
	informer, err := mgr.GetCache().GetInformer(context.Background(), &corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("getting the pod informer: %w", err)
	}
	indexed, ok := informer.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return listedPods{mgr.GetClient()}, nil
	}
	if err := informer.AddIndexers(toolscache.Indexers{podRevisionIndex: podRevisionKeys}); err != nil {
		return nil, fmt.Errorf("indexing pods by revision: %w", err)
	}
	return indexedPods{indexed.GetIndexer()}, nil
}

// indexedPods reads an informer's indexer: pointers to its objects, no list and no copies.
type indexedPods struct{ indexer toolscache.Indexer }

func (p indexedPods) updatedPods(_ context.Context, ns string, info *control.WorkloadInfo) ([]*corev1.Pod, error) {
	index, value := toolscache.NamespaceIndex, ns
	if v, ok := info.UpdatedPods.RequiresExactMatch(info.RevisionLabelKey); ok && slices.Contains(revisionLabelKeys, info.RevisionLabelKey) {
		index, value = podRevisionIndex, revisionKey(ns, info.RevisionLabelKey, v)
	}
	objs, err := p.indexer.ByIndex(index, value)
	if err != nil {
		return nil, fmt.Errorf("reading updated pods: %w", err)
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Namespace == ns && info.UpdatedPods.Matches(labels.Set(pod.Labels)) {
			out = append(out, pod)
		}
	}
	return out, nil
}

// listedPods lists through a client: the cache's without copies, or a test's fake client.
type listedPods struct{ client client.Client }

func (p listedPods) updatedPods(ctx context.Context, ns string, info *control.WorkloadInfo) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := p.client.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: info.UpdatedPods},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing updated pods: %w", err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
