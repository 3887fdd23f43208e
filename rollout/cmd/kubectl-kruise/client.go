package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

var (
	rolloutsGVR      = rolloutsv1beta1.GroupVersion.WithResource("rollouts")
	analysesGVR      = analysisv1alpha1.GroupVersion.WithResource("rolloutanalyses")
	batchReleasesGVR = rolloutsv1beta1.GroupVersion.WithResource("batchreleases")
	rolloutsResource = rolloutsGVR.GroupResource().String()
	patchOptions     = metav1.PatchOptions{FieldManager: "kubectl-kruise"}
)

// rolloutAPI is everything the commands do with the cluster. Reads are v1beta1: the storage version, so
// Rollouts created through v1alpha1 are served without conversion.
type rolloutAPI interface {
	GetRollout(ctx context.Context, name string) (*rolloutsv1beta1.Rollout, error)
	// GetBatchRelease returns nil, nil when the Rollout has no BatchRelease.
	GetBatchRelease(ctx context.Context, name string) (*rolloutsv1beta1.BatchRelease, error)
	PatchRolloutStatus(ctx context.Context, name string, patch []byte) (*unstructured.Unstructured, error)
	PatchRollout(ctx context.Context, name string, patch []byte) (*unstructured.Unstructured, error)
	ListRolloutNames(ctx context.Context) ([]string, error)
	// Analyses returns the RolloutAnalyses naming the Rollout, the one that binds it first; none where the
	// kind is not served.
	Analyses(ctx context.Context, rollout string) ([]analysisv1alpha1.RolloutAnalysis, error)
	PatchAnalysis(ctx context.Context, name string, patch []byte) (*unstructured.Unstructured, error)
	// WorkloadAnnotations returns the annotations of the workload a Rollout references.
	WorkloadAnnotations(ctx context.Context, ref rolloutsv1beta1.ObjectRef) (map[string]string, error)
	Namespace() string
}

// dynamicAPI is rolloutAPI over the dynamic client, in one namespace.
type dynamicAPI struct {
	client    dynamic.Interface
	mapper    meta.RESTMapper
	namespace string
}

func (d *dynamicAPI) WorkloadAnnotations(ctx context.Context, ref rolloutsv1beta1.ObjectRef) (map[string]string, error) {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	mapping, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("finding the resource of %s: %w", gvk.Kind, err)
	}
	u, err := d.client.Resource(mapping.Resource).Namespace(d.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return u.GetAnnotations(), nil
}

func (d *dynamicAPI) Namespace() string { return d.namespace }

func (d *dynamicAPI) GetRollout(ctx context.Context, name string) (*rolloutsv1beta1.Rollout, error) {
	u, err := d.client.Resource(rolloutsGVR).Namespace(d.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	ro := &rolloutsv1beta1.Rollout{}
	return ro, fromUnstructured(u, ro)
}

func (d *dynamicAPI) GetBatchRelease(ctx context.Context, name string) (*rolloutsv1beta1.BatchRelease, error) {
	u, err := d.client.Resource(batchReleasesGVR).Namespace(d.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading BatchRelease %s: %w", name, err)
	}
	br := &rolloutsv1beta1.BatchRelease{}
	return br, fromUnstructured(u, br)
}

func (d *dynamicAPI) PatchRolloutStatus(ctx context.Context, name string, patch []byte) (*unstructured.Unstructured, error) {
	return d.client.Resource(rolloutsGVR).Namespace(d.namespace).Patch(ctx, name, types.MergePatchType, patch, patchOptions, "status")
}

func (d *dynamicAPI) PatchRollout(ctx context.Context, name string, patch []byte) (*unstructured.Unstructured, error) {
	return d.client.Resource(rolloutsGVR).Namespace(d.namespace).Patch(ctx, name, types.MergePatchType, patch, patchOptions)
}

func (d *dynamicAPI) ListRolloutNames(ctx context.Context) ([]string, error) {
	list, err := d.client.Resource(rolloutsGVR).Namespace(d.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Rollouts: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for _, item := range list.Items {
		names = append(names, item.GetName())
	}
	return names, nil
}

func (d *dynamicAPI) Analyses(ctx context.Context, rollout string) ([]analysisv1alpha1.RolloutAnalysis, error) {
	list, err := d.client.Resource(analysesGVR).Namespace(d.namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing RolloutAnalyses: %w", err)
	}
	var out []analysisv1alpha1.RolloutAnalysis
	for i := range list.Items {
		ra := analysisv1alpha1.RolloutAnalysis{}
		if err := fromUnstructured(&list.Items[i], &ra); err != nil {
			return nil, err
		}
		if ra.Spec.RolloutRef.Name == rollout {
			out = append(out, ra)
		}
	}
	return bindingFirst(out), nil
}

func (d *dynamicAPI) PatchAnalysis(ctx context.Context, name string, patch []byte) (*unstructured.Unstructured, error) {
	return d.client.Resource(analysesGVR).Namespace(d.namespace).Patch(ctx, name, types.MergePatchType, patch, patchOptions)
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("decoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}
