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
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/orphans"
)

const (
	// podControllerIndex indexes pods by their controller's UID, so a DaemonSet lists its own pods (including
	// those its selector stopped matching) and the orphans, and never the rest of the namespace.
	podControllerIndex = "daemonset.flotilla.dev/controller-uid"
	// orphanKey is the index value of pods without a controller.
	orphanKey = "none"
)

func podController(pod *corev1.Pod) []string {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return []string{string(ref.UID)}
	}
	return []string{orphanKey}
}

// claimPods returns the pods the DaemonSet controls, as kube's workload controllers claim them: owned pods
// its selector no longer matches are released (they keep running, no longer counted or managed), and orphans
// it matches are adopted, such as the pods of a native DaemonSet deleted with --cascade=orphan to move to an
// Advanced one.
func (r *Reconciler) claimPods(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, sel labels.Selector) ([]*corev1.Pod, error) {
	// Shallow copies of the cache's pods: writers copy before they change one (patchPod).
	owned, err := r.pods.Get(ctx, ds.Namespace, string(ds.UID), nil)
	if err != nil {
		return nil, err
	}
	orphans, err := r.pods.Get(ctx, ds.Namespace, orphanKey, sel)
	if err != nil {
		return nil, err
	}
	kept, releaseErr := r.release(ctx, ds, sel, cacheindex.Shallow(owned))
	adopted, adoptErr := r.adopt(ctx, ds, cacheindex.Shallow(orphans))
	return append(kept, adopted...), errors.Join(releaseErr, adoptErr)
}

// release drops the DaemonSet's controller reference from the live pods its selector no longer matches.
func (r *Reconciler) release(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, sel labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	kept := make([]*corev1.Pod, 0, len(pods))
	var errs []error
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) || p.DeletionTimestamp != nil {
			kept = append(kept, p)
			continue
		}
		err := r.patchPod(ctx, ds, p, func(p *corev1.Pod) bool { return disown(p, ds) })
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("release: %w", err))
		default:
			r.Recorder.Eventf(ds, p, corev1.EventTypeNormal, "SuccessfulRelease", "Release",
				"released pod %s: the selector no longer matches its labels", p.Name)
		}
	}
	return kept, errors.Join(errs...)
}

// adopt makes the DaemonSet the controller of the orphans its selector matches. Pods being deleted are left
// alone.
func (r *Reconciler) adopt(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, orphans []*corev1.Pod) ([]*corev1.Pod, error) {
	var adopted []*corev1.Pod
	var errs []error
	for _, p := range orphans {
		if metav1.GetControllerOf(p) != nil || p.DeletionTimestamp != nil {
			continue
		}
		err := r.patchPod(ctx, ds, p, func(p *corev1.Pod) bool {
			p.OwnerReferences = append(p.OwnerReferences, *metav1.NewControllerRef(ds, plan.Kind))
			return true
		})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Gone, or changed (perhaps adopted by another): the next reconcile looks again.
		case err != nil:
			errs = append(errs, fmt.Errorf("adopt: %w", err))
		default:
			r.Recorder.Eventf(ds, p, corev1.EventTypeNormal, "SuccessfulAdopt", "Adopt", "adopted orphan pod %s", p.Name)
			adopted = append(adopted, p)
		}
	}
	return adopted, errors.Join(errs...)
}

// disown removes the DaemonSet's references from the pod; other owners stay.
func disown(p *corev1.Pod, ds *kruiseappsv1alpha1.DaemonSet) bool {
	refs := slices.DeleteFunc(slices.Clone(p.OwnerReferences), func(ref metav1.OwnerReference) bool { return ref.UID == ds.UID })
	changed := len(refs) != len(p.OwnerReferences)
	p.OwnerReferences = refs
	return changed
}

// adopters maps an orphan pod's events to the DaemonSets that may adopt it: claimPods adopts only when a
// reconcile runs, and Owns maps no event of a pod without a controller.
func (r *Reconciler) adopters() handler.EventHandler {
	return orphans.Handler(orphans.From(r.Client, func() client.ObjectList { return &kruiseappsv1alpha1.DaemonSetList{} },
		func(ds *kruiseappsv1alpha1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector }))
}
