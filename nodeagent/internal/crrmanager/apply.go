package crrmanager

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

type crrChange func(*kruiseappsv1alpha1.ContainerRecreateRequest)

// apply writes the plan in its order (see Plan); every write is skipped when it would change nothing.
func (r *Reconciler) apply(ctx context.Context, crr *kruiseappsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, p Plan) error {
	if p.Complete != nil {
		return r.complete(ctx, crr, p.Complete)
	}
	if err := r.patchMeta(ctx, crr, beforePod(p)); err != nil {
		return err
	}
	if p.RemoveFinalizer && !p.Release {
		var err error
		if pod, err = r.confirmReleased(ctx, crr, pod, &p); err != nil {
			return err
		}
	}
	if err := r.patchPod(ctx, crr, pod, p); err != nil {
		return err
	}
	if err := r.patchMeta(ctx, crr, afterPod(p)); err != nil {
		return err
	}
	if !p.Delete {
		return nil
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Deleting a finished ContainerRecreateRequest after its TTL")
	if err := r.Client.Delete(ctx, crr, client.Preconditions{UID: &crr.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the ContainerRecreateRequest after its TTL: %w", err)
	}
	return nil
}

func beforePod(p Plan) crrChange {
	return func(crr *kruiseappsv1alpha1.ContainerRecreateRequest) {
		if p.SyncStatuses != nil {
			setAnnotation(crr, kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey, *p.SyncStatuses)
		}
		if p.AddFinalizer && !HasFinalizer(crr) {
			crr.Finalizers = append(crr.Finalizers, kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey)
		}
	}
}

func afterPod(p Plan) crrChange {
	return func(crr *kruiseappsv1alpha1.ContainerRecreateRequest) {
		if p.AcquiredAt != "" {
			setAnnotation(crr, kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey, p.AcquiredAt)
		}
		if p.RemoveFinalizer {
			crr.Finalizers = slices.DeleteFunc(crr.Finalizers, func(f string) bool {
				return f == kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey
			})
		}
		if p.RemoveActive {
			delete(crr.Labels, kruiseappsv1alpha1.ContainerRecreateRequestActiveKey)
		}
	}
}

// confirmReleased reads the pod past the cache before the finalizer, the request's record of its hold, goes:
// a cache that does not show the hold yet would otherwise leave the pod held not ready with no request to
// release it. A pod still held is released first.
func (r *Reconciler) confirmReleased(ctx context.Context, crr *kruiseappsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, p *Plan) (*corev1.Pod, error) {
	if pod == nil {
		return nil, nil
	}
	live := &corev1.Pod{}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(pod), live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading pod %s before releasing the request's hold: %w", pod.Name, err)
	}
	p.Release = holds(live, crr) && live.DeletionTimestamp == nil
	return live, nil
}

func setAnnotation(crr *kruiseappsv1alpha1.ContainerRecreateRequest, key, value string) {
	if crr.Annotations == nil {
		crr.Annotations = map[string]string{}
	}
	crr.Annotations[key] = value
}

// patchMeta merge-patches the request's metadata; a finalizer change carries the optimistic lock, since
// a merge patch replaces the whole list.
func (r *Reconciler) patchMeta(ctx context.Context, crr *kruiseappsv1alpha1.ContainerRecreateRequest, change crrChange) error {
	before := crr.DeepCopy()
	change(crr)
	if equality.Semantic.DeepEqual(before.ObjectMeta, crr.ObjectMeta) {
		return nil
	}
	patch := client.MergeFrom(before)
	if !slices.Equal(before.Finalizers, crr.Finalizers) {
		patch = client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	}
	if err := r.Client.Patch(ctx, crr, patch); err != nil {
		return fmt.Errorf("patching the ContainerRecreateRequest's metadata: %w", err)
	}
	return nil
}

// patchPod adds or removes the request's KruisePodReady holder with one status patch; the optimistic lock
// makes a stale cache lose the race instead of overwriting conditions the kubelet wrote meanwhile.
func (r *Reconciler) patchPod(ctx context.Context, crr *kruiseappsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, p Plan) error {
	if pod == nil || (!p.Hold && !p.Release) {
		return nil
	}
	before := pod.DeepCopy()
	now := metav1.NewTime(r.Clock.Now())
	changed := false
	if p.Hold {
		changed = podreadiness.AddNotReady(pod, NotReadyUserAgent, HolderKey(crr), now)
	} else {
		changed = podreadiness.RemoveNotReady(pod, NotReadyUserAgent, HolderKey(crr), now)
	}
	if !changed {
		return nil
	}
	err := r.Client.Status().Patch(ctx, pod, client.StrategicMergeFrom(before, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) && p.Release {
		return nil // a deleted pod holds nothing
	}
	if err != nil {
		return fmt.Errorf("updating the KruisePodReady condition of pod %s: %w", pod.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Changed the pod's readiness hold", "pod", klog.KObj(pod), "hold", p.Hold)
	return nil
}

// complete finishes the request and records why; the optimistic lock keeps the node agent's status writes.
func (r *Reconciler) complete(ctx context.Context, crr *kruiseappsv1alpha1.ContainerRecreateRequest, c *Completion) error {
	before := crr.DeepCopy()
	now := metav1.NewTime(r.Clock.Now())
	crr.Status.Phase = kruiseappsv1alpha1.ContainerRecreateRequestCompleted
	crr.Status.CompletionTime = &now
	crr.Status.Message = c.Message
	if c.FailUnfinished {
		failUnfinished(crr, c.Message)
	}
	if err := r.Client.Status().Patch(ctx, crr, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("completing the ContainerRecreateRequest: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Completed the ContainerRecreateRequest", "reason", c.Reason, "message", c.Message)
	r.Recorder.Eventf(crr, nil, corev1.EventTypeWarning, c.Reason, "Complete", "%s", c.Message)
	return nil
}

func failUnfinished(crr *kruiseappsv1alpha1.ContainerRecreateRequest, msg string) {
	for i := range crr.Status.ContainerRecreateStates {
		s := &crr.Status.ContainerRecreateStates[i]
		if s.Phase != kruiseappsv1alpha1.ContainerRecreateRequestSucceeded && s.Phase != kruiseappsv1alpha1.ContainerRecreateRequestFailed {
			s.Phase, s.Message = kruiseappsv1alpha1.ContainerRecreateRequestFailed, msg
		}
	}
}
