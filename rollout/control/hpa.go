package control

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// A blue-green release turns off the HorizontalPodAutoscalers of its workload: an HPA scaling the workload
// while new pods surge beside the old ones would fight the release. It points the HPA's scaleTargetRef at a
// name that resolves to nothing (HPADisableSuffix appended) and strips the suffix again when it is done.
// HPAs are read unstructured so that v2 and v1 clusters are handled alike and no informer is started.

// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;patch

// hpaVersions are tried in order: autoscaling/v2, then v1 on clusters that do not serve v2.
var hpaVersions = []string{"v2", "v1"}

// disableHPAs points every HPA of t's workload at the disabled name.
func disableHPAs(ctx context.Context, c client.Client, t Target) error {
	return setHPAsDisabled(ctx, c, t, true)
}

// restoreHPAs points every HPA of t's workload back at the workload.
func restoreHPAs(ctx context.Context, c client.Client, t Target) error {
	return setHPAsDisabled(ctx, c, t, false)
}

func setHPAsDisabled(ctx context.Context, c client.Client, t Target, disabled bool) error {
	gv, err := schema.ParseGroupVersion(t.Ref.APIVersion)
	if err != nil {
		return fmt.Errorf("workloadRef.apiVersion %q: %w", t.Ref.APIVersion, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: t.Ref.Kind}
	hpas, gvk, err := listHPAs(ctx, c, t.Namespace)
	if err != nil {
		return err
	}
	for i := range hpas {
		hpa := &hpas[i]
		if hpa.GetKind() == "" {
			hpa.SetGroupVersionKind(gvk)
		}
		patch := hpaTargetPatch(hpa.Object, gk, t.Ref.Name, disabled)
		if err := applyMergePatch(ctx, c, hpa, patch); err != nil {
			return fmt.Errorf("HorizontalPodAutoscaler: %w", err)
		}
	}
	return nil
}

// listHPAs lists the HPAs of a namespace in the first autoscaling version the cluster serves; a cluster
// serving none has no HPA to turn off.
func listHPAs(ctx context.Context, c client.Client, ns string) ([]unstructured.Unstructured, schema.GroupVersionKind, error) {
	for _, version := range hpaVersions {
		gvk := schema.GroupVersionKind{Group: "autoscaling", Version: version, Kind: "HorizontalPodAutoscaler"}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := c.List(ctx, list, client.InNamespace(ns))
		switch {
		case err == nil:
			return list.Items, gvk, nil
		case !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err):
			return nil, gvk, fmt.Errorf("listing HorizontalPodAutoscalers in %s: %w", ns, err)
		}
	}
	return nil, schema.GroupVersionKind{}, nil
}

// hpaTargetPatch renames the scaleTargetRef of an HPA (as an unstructured object) that targets the workload
// gk/name, enabled or disabled; nil when the HPA targets something else or already has the wanted name.
func hpaTargetPatch(hpa map[string]any, gk schema.GroupKind, name string, disabled bool) map[string]any {
	ref := []string{"spec", "scaleTargetRef"}
	current := nestedString(hpa, append(ref, "name")...)
	gv, err := schema.ParseGroupVersion(nestedString(hpa, append(ref, "apiVersion")...))
	if err != nil || gv.Group != gk.Group || nestedString(hpa, append(ref, "kind")...) != gk.Kind {
		return nil
	}
	if current != name && current != name+rolloutsv1beta1.HPADisableSuffix {
		return nil
	}
	want := name
	if disabled {
		want = name + rolloutsv1beta1.HPADisableSuffix
	}
	if current == want {
		return nil
	}
	patch := map[string]any{}
	setNested(patch, want, append(ref, "name")...)
	return patch
}
