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
	"sigs.k8s.io/controller-runtime/pkg/handler"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
	"github.com/flotilla-dev/flotilla/workloads/orphans"
)

const (
	// podControllerIndex indexes pods by their controller's UID, so a CloneSet lists its own pods (including
	// those its selector stopped matching) and the orphans, and never the rest of the namespace.
	podControllerIndex = "cloneset.flotilla.dev/controller-uid"
	// orphanKey is the index value of pods without a controller.
	orphanKey = "none"
)

// podController is the podControllerIndex function.
func podController(pod *corev1.Pod) []string {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return []string{string(ref.UID)}
	}
	return []string{orphanKey}
}

// claimPods returns the pods the CloneSet controls, as every built-in workload controller claims them: owned
// pods its selector no longer matches are released (they keep running, no longer counted or managed), and
// orphans it matches are adopted.
func (r *Reconciler) claimPods(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, sel labels.Selector) ([]*corev1.Pod, error) {
	// Shallow copies of the cache's pods, not deep ones: a reconcile reads every pod of the CloneSet and writes
	// few, and deep copies were a fifth of the manager's CPU at a thousand pods. Writers copy first, and put
	// the written pod in place of the shallow copy (patchPod and friends).
	owned, err := r.podReader().Get(ctx, cs.Namespace, string(cs.UID), nil)
	if err != nil {
		return nil, err
	}
	orphans, err := r.podReader().Get(ctx, cs.Namespace, orphanKey, sel)
	if err != nil {
		return nil, err
	}
	kept, releaseErr := r.release(ctx, cs, sel, cacheindex.Shallow(owned))
	adopted, adoptErr := r.adopt(ctx, cs, cacheindex.Shallow(orphans))
	return append(kept, adopted...), errors.Join(releaseErr, adoptErr)
}

// podReader reads pods through the pod informer's index, or through the client's field index of the same
// name when the controller was not set up with a manager.
func (r *Reconciler) podReader() *cacheindex.Pods {
	if r.pods == nil {
		return cacheindex.FromClient(r.Client, podControllerIndex)
	}
	return r.pods
}

// release drops the CloneSet's controller reference from the live pods its selector no longer matches, and
// returns the pods it still controls. A CloneSet being deleted releases nothing: its pods go with it.
func (r *Reconciler) release(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, sel labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	kept := make([]*corev1.Pod, 0, len(pods))
	var errs []error
	for _, p := range pods {
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
func (r *Reconciler) adopt(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, orphans []*corev1.Pod) ([]*corev1.Pod, error) {
	var adopted []*corev1.Pod
	var errs []error
	for _, p := range orphans {
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

// adopters maps an orphan pod's events to the CloneSets that may adopt it: claimPods adopts only when a
// reconcile runs, and Owns maps no event of a pod without a controller.
func (r *Reconciler) adopters() handler.EventHandler {
	return orphans.Handler(orphans.From(r.Client, func() client.ObjectList { return &kruiseappsv1alpha1.CloneSetList{} },
		func(cs *kruiseappsv1alpha1.CloneSet) *metav1.LabelSelector { return cs.Spec.Selector }))
}
