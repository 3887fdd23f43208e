package control

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// ReplicaSetOwnerIndex is the cache's field index of ReplicaSets by the UID of their controller. A selector
// list scans and copies every ReplicaSet of the namespace; with a thousand Deployments releasing at once
// that scan was a fifth of the manager's CPU.
const ReplicaSetOwnerIndex = "rollout.flotilla.dev/replicaset-controller-uid"

// IndexReplicaSets adds ReplicaSetOwnerIndex to mgr's cache. Call it once per manager, before the
// controllers that read ReplicaSets start.
func IndexReplicaSets(mgr manager.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &appsv1.ReplicaSet{}, ReplicaSetOwnerIndex, ReplicaSetOwnerKey); err != nil {
		return fmt.Errorf("indexing ReplicaSets by controller: %w", err)
	}
	return nil
}

// ReplicaSetOwnerKey is the index key of a ReplicaSet: its controller's UID, none without one.
func ReplicaSetOwnerKey(obj client.Object) []string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return nil
	}
	return []string{string(ref.UID)}
}

// OwnedReplicaSets reads the ReplicaSets d controls through ReplicaSetOwnerIndex. A reader without the
// index refuses the list (a cache without it, or the API server, which has no such field selector): it
// lists by d's selector instead, which also reports any other failure.
// opts add to the list's options, such as client.UnsafeDisableDeepCopy for a caller that only reads.
func OwnedReplicaSets(ctx context.Context, r client.Reader, d *appsv1.Deployment, opts ...client.ListOption) ([]appsv1.ReplicaSet, error) {
	list := &appsv1.ReplicaSetList{}
	byOwner := []client.ListOption{client.InNamespace(d.Namespace), client.MatchingFields{ReplicaSetOwnerIndex: string(d.UID)}}
	if err := r.List(ctx, list, append(byOwner, opts...)...); err != nil {
		return ownedBySelector(ctx, r, d, opts)
	}
	return list.Items, nil
}

func ownedBySelector(ctx context.Context, r client.Reader, d *appsv1.Deployment, opts []client.ListOption) ([]appsv1.ReplicaSet, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s selector: %w", d.Namespace, d.Name, err)
	}
	list := &appsv1.ReplicaSetList{}
	bySelector := []client.ListOption{client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: selector}}
	if err := r.List(ctx, list, append(bySelector, opts...)...); err != nil {
		return nil, fmt.Errorf("listing ReplicaSets of %s/%s: %w", d.Namespace, d.Name, err)
	}
	return partitionOwnedReplicaSets(d, list.Items), nil
}
