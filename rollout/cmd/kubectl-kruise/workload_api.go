package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var (
	controllerRevisionsGVR = appsv1.SchemeGroupVersion.WithResource("controllerrevisions")
	replicaSetsGVR         = appsv1.SchemeGroupVersion.WithResource("replicasets")
	podsGVR                = corev1.SchemeGroupVersion.WithResource("pods")
	secretsGVR             = corev1.SchemeGroupVersion.WithResource("secrets")
	configMapsGVR          = corev1.SchemeGroupVersion.WithResource("configmaps")
)

// patchRequest is one write: a patch of the object or of one of its subresources, possibly a server dry run.
type patchRequest struct {
	Type        types.PatchType
	Data        []byte
	Subresource string
	DryRun      bool
}

// workloadAPI is what the workload commands do with the cluster, in one namespace.
type workloadAPI interface {
	Namespace() string
	// Get reads an object, or one of its subresources (e.g. "scale").
	Get(ctx context.Context, gvr schema.GroupVersionResource, name string, subresource ...string) (*unstructured.Unstructured, error)
	// List returns the objects matching a label selector ("" matches all).
	List(ctx context.Context, gvr schema.GroupVersionResource, selector string) ([]unstructured.Unstructured, error)
	Patch(ctx context.Context, gvr schema.GroupVersionResource, name string, p patchRequest) (*unstructured.Unstructured, error)
	Create(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error)
}

func (d *dynamicAPI) Get(ctx context.Context, gvr schema.GroupVersionResource, name string, subresource ...string) (*unstructured.Unstructured, error) {
	return d.client.Resource(gvr).Namespace(d.namespace).Get(ctx, name, metav1.GetOptions{}, subresource...)
}

func (d *dynamicAPI) List(ctx context.Context, gvr schema.GroupVersionResource, selector string) ([]unstructured.Unstructured, error) {
	list, err := d.client.Resource(gvr).Namespace(d.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
	}
	return list.Items, nil
}

func (d *dynamicAPI) Create(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	opts := metav1.CreateOptions{FieldManager: patchOptions.FieldManager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return d.client.Resource(gvr).Namespace(d.namespace).Create(ctx, obj, opts)
}

func (d *dynamicAPI) Patch(ctx context.Context, gvr schema.GroupVersionResource, name string, p patchRequest) (*unstructured.Unstructured, error) {
	opts := patchOptions
	if p.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var sub []string
	if p.Subresource != "" {
		sub = []string{p.Subresource}
	}
	return d.client.Resource(gvr).Namespace(d.namespace).Patch(ctx, name, p.Type, p.Data, opts, sub...)
}
