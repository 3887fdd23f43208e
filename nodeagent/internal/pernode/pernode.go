// Package pernode holds what the manager's controllers that keep one cluster-scoped object per node, named
// after it (NodeImage, NodePodProbe), share: which node events matter, when a node is ready for its object,
// and what to do with the object given its node.
package pernode

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// NodeChanged passes node creations and deletions, and of the updates only those to labels, readiness and
// deletion: the status heartbeats change nothing here.
var NodeChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	oldNode, okOld := e.ObjectOld.(*corev1.Node)
	newNode, okNew := e.ObjectNew.(*corev1.Node)
	return !okOld || !okNew || !maps.Equal(oldNode.Labels, newNode.Labels) || newNode.DeletionTimestamp != nil ||
		readyStatus(oldNode) != readyStatus(newNode)
}}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// ReadyFor reports whether node's object may be created now: the node is Ready and has been for delay, so
// that a flapping node gets none. wait is how long is left of the delay.
func ReadyFor(node *corev1.Node, now time.Time, delay time.Duration) (ready bool, wait time.Duration) {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status != corev1.ConditionTrue {
				return false, 0
			}
			return true, max(c.LastTransitionTime.Add(delay).Sub(now), 0)
		}
	}
	return false, 0
}

// Action is what a controller does with a node's object.
type Action int

const (
	// None: nothing to do (no node and no object, or the object is being deleted).
	None Action = iota
	// Create the object: the node is there and the object is not.
	Create
	// Delete the object: its node is gone or being deleted.
	Delete
	// Tidy the object: node and object are there (or the object stays without its node on purpose).
	Tidy
)

// Decide says what to do with a node's object, from what the cache holds: node (nil: none), whether the
// object exists and is being deleted, and whether it stays without a node on purpose (keep: a fake NodeImage
// of the tests).
func Decide(node *corev1.Node, exists, deleting, keep bool) Action {
	gone := node == nil || node.DeletionTimestamp != nil
	switch {
	case exists && deleting:
		return None
	case !exists && gone:
		return None
	case !exists:
		return Create
	case gone && !keep:
		return Delete
	}
	return Tidy
}

// Handlers are what a controller does with its object of a node; Reconcile deletes an object whose node is gone.
type Handlers[T client.Object] struct {
	// Create makes the object of a node that has none; judging whether the node is ready for it is its own.
	Create func(ctx context.Context, node *corev1.Node) (ctrl.Result, error)
	// Tidy brings an existing object up to date; node is nil for an object kept without its node.
	Tidy func(ctx context.Context, node *corev1.Node, obj T) (ctrl.Result, error)
	// Keep (nil: never) tells an object that stays without a node.
	Keep func(T) bool
}

// Reconcile is the reconcile of the object of the node key names, read into obj from c's cache: created for a
// node that has none, deleted once its node is gone or being deleted (unless kept), tidied otherwise, and left
// alone while it is being deleted.
func Reconcile[T client.Object](ctx context.Context, c client.Client, key types.NamespacedName, obj T, h Handlers[T]) (ctrl.Result, error) {
	node, obj, action, err := Load(ctx, c, key, obj, h.Keep)
	if err != nil {
		return ctrl.Result{}, err
	}
	switch action {
	case None:
		return ctrl.Result{}, nil
	case Delete:
		return ctrl.Result{}, deleteObject(ctx, c, obj)
	case Create:
		return h.Create(ctx, node)
	}
	if node != nil && node.DeletionTimestamp != nil {
		node = nil
	}
	return h.Tidy(ctx, node, obj)
}

// deleteObject deletes the object of a gone node, that object only (a new one of the name is not its).
func deleteObject(ctx context.Context, c client.Client, obj client.Object) error {
	uid := obj.GetUID()
	err := c.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting the %T %s of a gone node: %w", obj, obj.GetName(), err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted the object of a gone node", "object", fmt.Sprintf("%T", obj))
	return nil
}

// Load reads the node key names and its object into obj from c, and decides what to do with the object
// (Decide); keep (nil: never) tells an object that stays without a node. The object comes back as the zero T
// when there is none, and so does the node.
func Load[T client.Object](ctx context.Context, c client.Reader, key types.NamespacedName, obj T, keep func(T) bool) (*corev1.Node, T, Action, error) {
	var zero T
	node, err := Get(ctx, c, key, &corev1.Node{})
	if err != nil {
		return nil, zero, None, err
	}
	if err := c.Get(ctx, key, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, zero, None, fmt.Errorf("reading %s: %w", key.Name, err)
		}
		return node, zero, Decide(node, false, false, false), nil
	}
	return node, obj, Decide(node, true, obj.GetDeletionTimestamp() != nil, keep != nil && keep(obj)), nil
}

// Get reads the object of key into obj; it returns nil (the zero T) when there is none.
func Get[T client.Object](ctx context.Context, c client.Reader, key types.NamespacedName, obj T) (T, error) {
	var zero T
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return zero, nil
		}
		return zero, fmt.Errorf("reading %s: %w", key.Name, err)
	}
	return obj, nil
}
