package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
)

// world is what one reconcile knows of a DaemonSet: its pods, the nodes, its revisions, and the planners'
// input built from them.
type world struct {
	// pods are every controlled pod, terminating ones included. They share their maps and slices with the
	// informer's cache: change a copy and assign it (the pod writers do).
	pods  []*corev1.Pod
	nodes []*corev1.Node
	revs  *revisions
	in    plan.Input
	// mu guards wake, which pod workers set: how soon the reconcile wants to look again (0: no need).
	mu   sync.Mutex
	wake time.Duration
}

func (w *world) wakeIn(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wake = earliest(w.wake, d)
}

// errInvalidSelector: the webhook refuses such selectors; without the webhook the DaemonSet reports it
// rather than claiming every pod of its namespace.
var errInvalidSelector = errors.New("spec.selector")

// gather reads the DaemonSet's world and records its current template as a revision.
func (r *Reconciler) gather(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet) (*world, error) {
	sel, err := selectorOf(ds)
	if err != nil {
		return nil, err
	}
	pods, err := r.claimPods(ctx, ds, sel)
	if err != nil {
		return nil, err
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	w := &world{pods: pods, nodes: make([]*corev1.Node, len(nodes.Items))}
	for i := range nodes.Items {
		w.nodes[i] = &nodes.Items[i]
	}
	if w.revs, err = r.syncRevisions(ctx, ds); err != nil {
		return nil, err
	}
	w.in = r.input(ds, w)
	return w, nil
}

func selectorOf(ds *kruiseappsv1alpha1.DaemonSet) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, reconcile.TerminalError(fmt.Errorf("%w: %w", errInvalidSelector, err))
	}
	if ds.Spec.Selector == nil || sel.Empty() {
		return nil, reconcile.TerminalError(fmt.Errorf("%w: Required value: an empty selector would select every pod of the namespace", errInvalidSelector))
	}
	return sel, nil
}

// input builds the planners' input: every node judged for the template, the pods by node, the strategy
// resolved over the nodes that should run a pod.
func (r *Reconciler) input(ds *kruiseappsv1alpha1.DaemonSet, w *world) plan.Input {
	now := r.Clock.Now()
	spec := plan.DaemonSpec(&ds.Spec.Template.Spec)
	in := plan.Input{Now: now, Revision: plan.RevisionOf(ds, w.revs.hash)}
	in.Nodes = plan.Nodes(w.nodes, spec, plan.Resolve(ds, 0).Selector)
	in.Strategy = plan.Resolve(ds, in.Desired())
	in.Pods, _ = nodeplacement.ByNode(w.pods)
	in.Backoff = map[string]bool{}
	for node := range in.Pods {
		in.Backoff[node] = r.failedPods.IsInBackOffSinceUpdate(backoffKey(ds, node), now)
	}
	return in
}

// backoffKey names a node's failed-pod backoff; a new generation of the DaemonSet starts afresh, as upstream.
func backoffKey(ds *kruiseappsv1alpha1.DaemonSet, node string) string {
	return fmt.Sprintf("%s/%d/%s", ds.UID, ds.Status.ObservedGeneration, node)
}

// allDaemonSets maps a node event to every DaemonSet: each judges the node for itself.
func (r *Reconciler) allDaemonSets(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &kruiseappsv1alpha1.DaemonSetList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// controlled returns the revisions whose controller is ds.
func controlled(ds *kruiseappsv1alpha1.DaemonSet, items []appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for i := range items {
		if ref := metav1.GetControllerOf(&items[i]); ref != nil && ref.UID == ds.UID {
			out = append(out, &items[i])
		}
	}
	return out
}
