package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// patchPod applies change to a copy of p and patches the difference (guarded by resourceVersion, so that a
// pod changed meanwhile is re-read rather than overwritten). p is updated to the written pod.
// When the patch loses to a write that touched only the pod's status (the kubelet reporting, typically
// right after one of this controller's own writes), the decision behind change still holds: it is applied
// once more to the pod as the API server has it. Any other race is returned, and the reconcile plans again.
func (r *Reconciler) patchPod(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	err := r.tryPatch(ctx, cs, p, change)
	if !apierrors.IsConflict(err) || r.APIReader == nil {
		return err
	}
	fresh := &corev1.Pod{}
	if getErr := r.APIReader.Get(ctx, client.ObjectKeyFromObject(p), fresh); getErr != nil || !sameExceptStatus(p, fresh) {
		return err
	}
	*p = *fresh
	return r.tryPatch(ctx, cs, p, change)
}

// patchPodStatus changes the pod's conditions. It needs no lock: a strategic merge patch of status.conditions
// merges by condition type, so the kubelet's own conditions, written meanwhile, stay as they are, and the
// conditions this controller owns (InPlaceUpdateReady, KruisePodReady holders) carry their full new value.
func (r *Reconciler) patchPodStatus(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	next := p.DeepCopy()
	if !change(next) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, next, client.StrategicMergeFrom(p)); err != nil {
		return fmt.Errorf("patch status of pod %s: %w", p.Name, err)
	}
	r.expectations.Updated(client.ObjectKeyFromObject(cs), next.Name, next.ResourceVersion)
	*p = *next
	return nil
}

func (r *Reconciler) tryPatch(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, change func(*corev1.Pod) bool) error {
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

// sameExceptStatus reports whether only the pod's status changed between a and b.
func sameExceptStatus(a, b *corev1.Pod) bool {
	return a.UID == b.UID && equality.Semantic.DeepEqual(a.Labels, b.Labels) && equality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences) &&
		equality.Semantic.DeepEqual(a.Annotations, b.Annotations) && equality.Semantic.DeepEqual(a.Finalizers, b.Finalizers) &&
		equality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) && equality.Semantic.DeepEqual(a.Spec, b.Spec)
}
