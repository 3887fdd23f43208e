package deletionprotection

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dpadmission "github.com/flotilla-dev/flotilla/workloads/deletionprotection/admission"
)

// The manager lists pods and claims of a namespace being deleted, and the objects of a CRD being deleted (any
// custom resource: the chart grants that list only with DeletionProtectionForCRDCascadingGate).
// +kubebuilder:rbac:groups="",resources=pods;persistentvolumeclaims,verbs=list

// pageSize bounds one list of a Cascading check; a namespace with more pods is read in several pages.
const pageSize = 500

// Counter counts what a Cascading rule protects, straight from the API server: a deletion is rare, and a
// count read from a cache could miss a pod created a moment before and let the namespace go.
type Counter interface {
	ActivePods(ctx context.Context, namespace string) (int, error)
	BoundClaims(ctx context.Context, namespace string) (int, error)
	CustomResources(ctx context.Context, gvr schema.GroupVersionResource) (int, error)
}

// APICounter is the Counter of a manager: reader is uncached (the manager's API reader), meta lists custom
// resources as metadata only, whatever their kind, without a cache or a scheme for them.
type APICounter struct {
	Reader   client.Reader
	Metadata metadata.Interface
}

// ActivePods counts the namespace's pods that are neither finished nor being deleted.
func (c *APICounter) ActivePods(ctx context.Context, namespace string) (int, error) {
	n := 0
	err := pages(ctx, c.Reader, &corev1.PodList{}, namespace, func(l *corev1.PodList) { n += dpadmission.ActivePods(l.Items) })
	if err != nil {
		return 0, fmt.Errorf("listing the pods of namespace %s: %w", namespace, err)
	}
	return n, nil
}

// BoundClaims counts the namespace's Bound PersistentVolumeClaims that are not being deleted.
func (c *APICounter) BoundClaims(ctx context.Context, namespace string) (int, error) {
	n := 0
	err := pages(ctx, c.Reader, &corev1.PersistentVolumeClaimList{}, namespace, func(l *corev1.PersistentVolumeClaimList) {
		n += dpadmission.BoundClaims(l.Items)
	})
	if err != nil {
		return 0, fmt.Errorf("listing the PersistentVolumeClaims of namespace %s: %w", namespace, err)
	}
	return n, nil
}

// pages lists the namespace's objects into list page by page, calling each on every page.
func pages[L client.ObjectList](ctx context.Context, r client.Reader, list L, namespace string, each func(L)) error {
	opts := []client.ListOption{client.InNamespace(namespace), client.Limit(pageSize)}
	for {
		if err := r.List(ctx, list, opts...); err != nil {
			return err
		}
		each(list)
		next := list.GetContinue()
		if next == "" {
			return nil
		}
		opts = []client.ListOption{client.InNamespace(namespace), client.Limit(pageSize), client.Continue(next)}
	}
}

// CustomResources counts the custom resources of gvr, in every namespace, that are not being deleted. The
// first page holds one object: if it is not being deleted the answer is that one plus the API server's
// estimate of the rest, so a CRD with many objects costs one small list. Objects being deleted are skipped
// page by page until one that is not turns up.
func (c *APICounter) CustomResources(ctx context.Context, gvr schema.GroupVersionResource) (int, error) {
	opts := metav1.ListOptions{Limit: 1}
	for {
		list, err := c.Metadata.Resource(gvr).List(ctx, opts)
		if err != nil {
			return 0, fmt.Errorf("listing the %s: %w", gvr.GroupResource(), err)
		}
		if n := liveObjects(list); n > 0 || list.Continue == "" {
			return n + remaining(list, n), nil
		}
		opts = metav1.ListOptions{Limit: pageSize, Continue: list.Continue}
	}
}

func liveObjects(list *metav1.PartialObjectMetadataList) int {
	n := 0
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// remaining is the API server's estimate of the objects after this page, once a live one was found.
func remaining(list *metav1.PartialObjectMetadataList, live int) int {
	if live == 0 || list.RemainingItemCount == nil || *list.RemainingItemCount < 0 {
		return 0
	}
	return int(*list.RemainingItemCount)
}
