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

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
	"github.com/flotilla-dev/flotilla/workloads/orphans"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

const (
	// podControllerIndex indexes pods by their controller's UID, so a set lists its own pods (including
	// those its selector stopped matching) and the orphans, and never the rest of the namespace.
	podControllerIndex = "statefulset.flotilla.dev/controller-uid"
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

// member reports whether a pod belongs to the set as upstream's controller tells: its selector matches the
// pod's labels and the pod's name is the set's name and an ordinal.
func member(set *kruiseappsv1beta1.StatefulSet, sel labels.Selector, p *corev1.Pod) bool {
	return sel.Matches(labels.Set(p.Labels)) && plan.Ordinal(set.Name, p.Name) >= 0
}

// claimPods returns the pods the set controls, as the built-in controllers claim them: owned pods that are no
// longer members are released (they keep running, no longer managed), orphan members are adopted (a pod left
// by a deleted apps/v1 StatefulSet of the same name, say). Shallow copies of the cache's pods: writers copy
// before they change one and put the written pod in its place.
func (r *Reconciler) claimPods(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, sel labels.Selector) ([]*corev1.Pod, error) {
	owned, err := r.podReader().Get(ctx, set.Namespace, string(set.UID), nil)
	if err != nil {
		return nil, err
	}
	orphans, err := r.podReader().Get(ctx, set.Namespace, orphanKey, sel)
	if err != nil {
		return nil, err
	}
	kept, releaseErr := r.release(ctx, set, sel, cacheindex.Shallow(owned))
	adopted, adoptErr := r.adopt(ctx, set, sel, cacheindex.Shallow(orphans))
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

func (r *Reconciler) release(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, sel labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	kept := make([]*corev1.Pod, 0, len(pods))
	var errs []error
	for _, p := range pods {
		if member(set, sel, p) || p.DeletionTimestamp != nil {
			kept = append(kept, p)
			continue
		}
		switch err := r.patchPod(ctx, set, p, func(p *corev1.Pod) bool { return disown(p, set) }); {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("release: %w", err))
		default:
			r.Recorder.Eventf(set, p, corev1.EventTypeNormal, "SuccessfulRelease", "Release",
				"released pod %s: it is no longer a member of the StatefulSet", p.Name)
		}
	}
	return kept, errors.Join(errs...)
}

func (r *Reconciler) adopt(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, sel labels.Selector, orphans []*corev1.Pod) ([]*corev1.Pod, error) {
	var adopted []*corev1.Pod
	var errs []error
	for _, p := range orphans {
		if metav1.GetControllerOf(p) != nil || p.DeletionTimestamp != nil || !member(set, sel, p) {
			continue
		}
		switch err := r.patchPod(ctx, set, p, func(p *corev1.Pod) bool { return own(p, set) }); {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Gone, or changed (perhaps adopted by another): the next reconcile looks again.
		case err != nil:
			errs = append(errs, fmt.Errorf("adopt: %w", err))
		default:
			r.Recorder.Eventf(set, p, corev1.EventTypeNormal, "SuccessfulAdopt", "Adopt", "adopted orphan pod %s", p.Name)
			adopted = append(adopted, p)
		}
	}
	return adopted, errors.Join(errs...)
}

func own(p *corev1.Pod, set *kruiseappsv1beta1.StatefulSet) bool {
	p.OwnerReferences = append(slices.Clone(p.OwnerReferences), *metav1.NewControllerRef(set, setKind))
	return true
}

func disown(p *corev1.Pod, set *kruiseappsv1beta1.StatefulSet) bool {
	refs := slices.DeleteFunc(slices.Clone(p.OwnerReferences), func(ref metav1.OwnerReference) bool { return ref.UID == set.UID })
	changed := len(refs) != len(p.OwnerReferences)
	p.OwnerReferences = refs
	return changed
}

// adopters maps an orphan pod's events to the sets that may adopt it: claimPods adopts only when a
// reconcile runs, and Owns maps no event of a pod without a controller.
func (r *Reconciler) adopters() handler.EventHandler {
	return orphans.Handler(orphans.From(r.Client, func() client.ObjectList { return &kruiseappsv1beta1.StatefulSetList{} },
		func(set *kruiseappsv1beta1.StatefulSet) *metav1.LabelSelector { return set.Spec.Selector }))
}
