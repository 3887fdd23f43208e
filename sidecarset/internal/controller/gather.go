package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// gather lists the SidecarSet's pods: active pods its selector and namespaces match that it injected. They
// are the cache's own, read only (the plan and the writes copy a pod before changing it): a reconcile
// follows every pod event, and copying every selected pod each time is work for nothing.
func (r *Reconciler) gather(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return nil, reconcile.TerminalError(fmt.Errorf("spec.selector: %w", err))
	}
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy}
	if set.Spec.Namespace != "" {
		opts = append(opts, client.InNamespace(set.Spec.Namespace))
	}
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	inNamespaces, err := r.namespaceFilter(ctx, set)
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		if p := &list.Items[i]; active(p) && inNamespaces(p.Namespace) && inject.PodHash(p, set.Name) != "" {
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
