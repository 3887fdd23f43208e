// Package podwrite is how the workload controllers change their pods: a change function applied to a copy,
// the difference written in one patch, the written pod handed back, and every write told to the workload's
// expectations so that the next reconcile waits for its cache to show it.
package podwrite

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Writer writes the pods of one workload.
type Writer struct {
	Client client.Client
	// APIReader, when set, re-reads a pod whose patch lost to a write of its status alone, so that the change
	// is applied once more; without it the conflict is returned.
	APIReader client.Reader
	// Wrote is told the pod and resource version of every write (the workload's expectations).
	Wrote func(pod, resourceVersion string)
}

// Patch applies change to a copy of p and sends the difference as a merge patch guarded by the pod's
// resourceVersion, so that a pod changed meanwhile is not overwritten. When the patch loses to a write that
// touched only the pod's status (the kubelet reporting, typically right after the controller's own write), the
// decision behind change still holds and is applied once more to the pod as it is now; any other race is
// returned for the next reconcile to plan again. p becomes the written pod.
func (w Writer) Patch(ctx context.Context, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	err := w.tryPatch(ctx, p, change)
	if !apierrors.IsConflict(err) || w.APIReader == nil {
		return err
	}
	fresh := &corev1.Pod{}
	if getErr := w.APIReader.Get(ctx, client.ObjectKeyFromObject(p), fresh); getErr != nil || !sameExceptStatus(p, fresh) {
		return err
	}
	*p = *fresh
	return w.tryPatch(ctx, p, change)
}

func (w Writer) tryPatch(ctx context.Context, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	next := p.DeepCopy()
	if !change(next) {
		return nil
	}
	if err := w.Client.Patch(ctx, next, client.MergeFromWithOptions(p, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patch pod %s: %w", p.Name, err)
	}
	w.Wrote(next.Name, next.ResourceVersion)
	*p = *next
	return nil
}

// PatchStatus changes the pod's conditions with a strategic merge patch, which merges by condition type: the
// kubelet's conditions, written meanwhile, stay as they are, and the ones the controller owns carry their
// whole new value, so no lock is needed. p becomes the written pod.
func (w Writer) PatchStatus(ctx context.Context, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	next := p.DeepCopy()
	if !change(next) {
		return nil
	}
	if err := w.Client.Status().Patch(ctx, next, client.StrategicMergeFrom(p)); err != nil {
		return fmt.Errorf("patch status of pod %s: %w", p.Name, err)
	}
	w.Wrote(next.Name, next.ResourceVersion)
	*p = *next
	return nil
}

// sameExceptStatus reports whether only the pod's status changed between a and b.
func sameExceptStatus(a, b *corev1.Pod) bool {
	return a.UID == b.UID && equality.Semantic.DeepEqual(a.Labels, b.Labels) && equality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences) &&
		equality.Semantic.DeepEqual(a.Annotations, b.Annotations) && equality.Semantic.DeepEqual(a.Finalizers, b.Finalizers) &&
		equality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) && equality.Semantic.DeepEqual(a.Spec, b.Spec)
}
