package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// TargetIndex indexes the cached PersistentPodStates by the StatefulSet they keep (TargetKey), so that a pod,
// a StatefulSet or the pod webhook finds its PersistentPodState without listing the namespace's.
const TargetIndex = "persistentpodstate.spec.targetRef"

// IndexTargets registers TargetIndex on the manager's cache; call it once, before the controllers and the pod
// webhook read it.
func IndexTargets(mgr manager.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &kruiseappsv1alpha1.PersistentPodState{}, TargetIndex, TargetKeys); err != nil {
		return fmt.Errorf("indexing PersistentPodStates by target: %w", err)
	}
	return nil
}

// TargetKeys are a PersistentPodState's keys in TargetIndex.
func TargetKeys(obj client.Object) []string {
	pps, ok := obj.(*kruiseappsv1alpha1.PersistentPodState)
	if !ok {
		return nil
	}
	ref := pps.Spec.TargetReference
	return []string{TargetKey(ref.APIVersion, ref.Kind, ref.Name)}
}

// TargetKey identifies a target by group, kind and name: any version names the same StatefulSet.
func TargetKey(apiVersion, kind, name string) string {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return gv.Group + "/" + kind + "/" + name
}

// Find is the PersistentPodState (not being deleted) of the namespace that keeps the pods of the StatefulSet
// of apiVersion and name, read from the cache through TargetIndex; nil when there is none.
func Find(ctx context.Context, c client.Reader, namespace, apiVersion, name string) (*kruiseappsv1alpha1.PersistentPodState, error) {
	list := &kruiseappsv1alpha1.PersistentPodStateList{}
	err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{TargetIndex: TargetKey(apiVersion, "StatefulSet", name)})
	if err != nil {
		return nil, fmt.Errorf("listing the PersistentPodStates of StatefulSet %s/%s: %w", namespace, name, err)
	}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}
