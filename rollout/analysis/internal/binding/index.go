package binding

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

// RolloutRefIndex indexes the cached RolloutAnalyses by spec.rolloutRef.name, so that a Rollout's event and
// the one-per-Rollout check read only the RolloutAnalyses naming it.
const RolloutRefIndex = "spec.rolloutRef.name"

func indexRolloutRef(mgr manager.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &analysisv1alpha1.RolloutAnalysis{}, RolloutRefIndex,
		func(obj client.Object) []string {
			if ra, ok := obj.(*analysisv1alpha1.RolloutAnalysis); ok {
				return []string{ra.Spec.RolloutRef.Name}
			}
			return nil
		})
	if err != nil {
		return fmt.Errorf("indexing RolloutAnalyses by Rollout: %w", err)
	}
	return nil
}

// naming lists the RolloutAnalyses of the namespace that name the Rollout.
func naming(ctx context.Context, c client.Reader, namespace, rollout string) ([]analysisv1alpha1.RolloutAnalysis, error) {
	list := &analysisv1alpha1.RolloutAnalysisList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{RolloutRefIndex: rollout}); err != nil {
		return nil, fmt.Errorf("listing the RolloutAnalyses of Rollout %s/%s: %w", namespace, rollout, err)
	}
	return list.Items, nil
}

// analysesOf maps an object to the RolloutAnalyses naming the Rollout rolloutOf says it is about: a Rollout
// itself, or a RolloutAnalysis's Rollout (so that when one of two RolloutAnalyses of a Rollout goes, the
// other takes over).
func analysesOf(c client.Reader, rolloutOf func(client.Object) string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		items, err := naming(ctx, c, obj.GetNamespace(), rolloutOf(obj))
		if err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(items))
		for i := range items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&items[i])})
		}
		return out
	})
}
