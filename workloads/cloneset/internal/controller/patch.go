package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// patchPod applies change to a copy of p and patches the difference (guarded by resourceVersion, so that a
// pod changed meanwhile is re-read rather than overwritten). p is updated to the written pod.
func (r *Reconciler) patchPod(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	next := p.DeepCopy()
	if !change(next) {
		return nil
	}
	if err := r.Client.Patch(ctx, next, client.MergeFromWithOptions(p, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patch pod %s: %w", p.Name, err)
	}
	r.expectations.Updated(client.ObjectKeyFromObject(cs), next.Name, next.ResourceVersion)
	*p = *next
	return nil
}

// patchPodStatus is patchPod for the status subresource (pod conditions).
func (r *Reconciler) patchPodStatus(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	next := p.DeepCopy()
	if !change(next) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, next, client.MergeFromWithOptions(p, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patch status of pod %s: %w", p.Name, err)
	}
	r.expectations.Updated(client.ObjectKeyFromObject(cs), next.Name, next.ResourceVersion)
	*p = *next
	return nil
}
