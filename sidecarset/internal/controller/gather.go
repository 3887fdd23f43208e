package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// gather reads the SidecarSet's pods: active pods its selector and namespaces match that it injected, from
// the cache's index of them. They are the cache's own, read only (the plan and the writes copy a pod before
// changing it): a reconcile follows pod events, and copying every selected pod each time is work for nothing.
func (r *Reconciler) gather(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return nil, reconcile.TerminalError(fmt.Errorf("spec.selector: %w", err))
	}
	injected, err := r.pods.Get(ctx, set.Spec.Namespace, set.Name, sel)
	if err != nil {
		return nil, err
	}
	inNamespaces, err := r.namespaceFilter(ctx, set)
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for _, p := range injected {
		if active(p) && inNamespaces(p.Namespace) {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// namespaceFilter tells which namespaces spec.namespaceSelector picks (every one without a selector).
func (r *Reconciler) namespaceFilter(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet) (func(string) bool, error) {
	if set.Spec.NamespaceSelector == nil {
		return func(string) bool { return true }, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.NamespaceSelector)
	if err != nil {
		return nil, reconcile.TerminalError(fmt.Errorf("spec.namespaceSelector: %w", err))
	}
	list := &corev1.NamespaceList{}
	if err := r.Client.List(ctx, list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	picked := map[string]bool{}
	for _, ns := range list.Items {
		picked[ns.Name] = true
	}
	return func(ns string) bool { return picked[ns] }, nil
}

func active(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}
