package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	// podControllerIndex indexes pods by their controller's UID, so a CloneSet lists its own pods (including
	// those its selector stopped matching) and the orphans, and never the rest of the namespace.
	podControllerIndex = "cloneset.flotilla.dev/controller-uid"
	// orphanKey is the index value of pods without a controller.
	orphanKey = "none"
)

// podController is the podControllerIndex function.
func podController(obj client.Object) []string {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return []string{string(ref.UID)}
	}
	return []string{orphanKey}
}

// claimPods returns the pods the CloneSet controls, as every built-in workload controller claims them: owned
// pods its selector no longer matches are released (they keep running, no longer counted or managed), and
// orphans it matches are adopted.
func (r *Reconciler) claimPods(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, sel labels.Selector) ([]*corev1.Pod, error) {
	owned, orphans := &corev1.PodList{}, &corev1.PodList{}
	// The cache's own pods, not copies: a reconcile reads every pod of the CloneSet and writes few, and the
	// copies were a fifth of the manager's CPU at a thousand pods. Writers copy first (patchPod and friends).
	if err := r.Client.List(ctx, owned, client.InNamespace(cs.Namespace), client.MatchingFields{podControllerIndex: string(cs.UID)},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	if err := r.Client.List(ctx, orphans, client.InNamespace(cs.Namespace),
		client.MatchingFields{podControllerIndex: orphanKey}, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list orphan pods: %w", err)
	}
	kept, releaseErr := r.release(ctx, cs, sel, owned.Items)
	adopted, adoptErr := r.adopt(ctx, cs, orphans.Items)
	return append(kept, adopted...), errors.Join(releaseErr, adoptErr)
}

// release drops the CloneSet's controller reference from the live pods its selector no longer matches, and
// returns the pods it still controls. A CloneSet being deleted releases nothing: its pods go with it.
func (r *Reconciler) release(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, sel labels.Selector, pods []corev1.Pod) ([]*corev1.Pod, error) {
	kept := make([]*corev1.Pod, 0, len(pods))
	var errs []error
	for i := range pods {
		p := &pods[i]
		if sel.Matches(labels.Set(p.Labels)) || p.DeletionTimestamp != nil || cs.DeletionTimestamp != nil {
			kept = append(kept, p)
			continue
		}
		switch err := r.patchPod(ctx, cs, p, func(p *corev1.Pod) bool { return disown(p, cs) }); {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("release: %w", err))
		default:
			r.Recorder.Eventf(cs, p, corev1.EventTypeNormal, "SuccessfulRelease", "Release",
				"released pod %s: the selector no longer matches its labels", p.Name)
		}
	}
	return kept, errors.Join(errs...)
}

// adopt makes the CloneSet the controller of the orphan pods given, which its selector matches, as upstream
// (and every built-in workload controller) does: a pod left behind by a deleted owner, or created by hand with
// the CloneSet's labels, is counted and managed instead of running beside it. Pods being deleted are left
// alone. It returns the pods it adopted.
func (r *Reconciler) adopt(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, orphans []corev1.Pod) ([]*corev1.Pod, error) {
	var adopted []*corev1.Pod
	var errs []error
	for i := range orphans {
		p := &orphans[i]
		if metav1.GetControllerOf(p) != nil || p.DeletionTimestamp != nil || cs.DeletionTimestamp != nil {
			continue
		}
		switch err := r.patchPod(ctx, cs, p, func(p *corev1.Pod) bool { return own(p, cs) }); {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Gone, or changed (perhaps adopted by another): the next reconcile looks again.
		case err != nil:
			errs = append(errs, fmt.Errorf("adopt: %w", err))
		default:
			r.Recorder.Eventf(cs, p, corev1.EventTypeNormal, "SuccessfulAdopt", "Adopt", "adopted orphan pod %s", p.Name)
			adopted = append(adopted, p)
		}
	}
	return adopted, errors.Join(errs...)
}

// own adds the CloneSet's controller reference to the pod.
func own(p *corev1.Pod, cs *kruiseappsv1alpha1.CloneSet) bool {
	p.OwnerReferences = append(p.OwnerReferences, *metav1.NewControllerRef(cs, cloneSetKind))
	return true
}

// disown removes the CloneSet's references from the pod; other owners stay.
func disown(p *corev1.Pod, cs *kruiseappsv1alpha1.CloneSet) bool {
	refs := slices.DeleteFunc(slices.Clone(p.OwnerReferences), func(ref metav1.OwnerReference) bool { return ref.UID == cs.UID })
	changed := len(refs) != len(p.OwnerReferences)
	p.OwnerReferences = refs
	return changed
}
