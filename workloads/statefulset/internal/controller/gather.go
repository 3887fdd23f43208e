package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// world is what one reconcile reads about a set: the pods and revisions it controls and its namespace's
// claims by name.
type world struct {
	selector labels.Selector
	// pods are every controlled pod, terminating ones included. They share their maps and slices with the
	// informer's cache: never change one in place; change a copy and assign it (the patch helpers do).
	pods      []*corev1.Pod
	claims    map[string]*corev1.PersistentVolumeClaim
	revisions []*appsv1.ControllerRevision
	// wake is how soon the reconcile wants to look again for a timer of its own (0: none); set from several
	// goroutines.
	mu   sync.Mutex
	wake time.Duration
}

// wakeIn asks for a reconcile within d.
func (w *world) wakeIn(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d > 0 && (w.wake == 0 || d < w.wake) {
		w.wake = d
	}
}

// selectorOf parses spec.selector. The webhook rejects a bad or empty one; without the webhook the set
// reports it rather than adopting every pod of its namespace.
func selectorOf(set *kruiseappsv1beta1.StatefulSet) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	if sel.Empty() {
		return nil, errors.New("spec.selector: Required value: an empty selector would select every pod of the namespace")
	}
	return sel, nil
}

func (r *Reconciler) gather(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, sel labels.Selector) (*world, error) {
	pods, err := r.claimPods(ctx, set, sel)
	if err != nil {
		return nil, err
	}
	w := &world{selector: sel, pods: pods, claims: map[string]*corev1.PersistentVolumeClaim{}}
	if len(set.Spec.VolumeClaimTemplates) > 0 {
		claims := &corev1.PersistentVolumeClaimList{}
		if err := r.Client.List(ctx, claims, client.InNamespace(set.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list claims: %w", err)
		}
		for i := range claims.Items {
			w.claims[claims.Items[i].Name] = &claims.Items[i]
		}
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, revs, client.InNamespace(set.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list revisions: %w", err)
	}
	for i := range revs.Items {
		if ref := metav1.GetControllerOf(&revs.Items[i]); ref != nil && ref.UID == set.UID {
			w.revisions = append(w.revisions, &revs.Items[i])
		}
	}
	return w, nil
}

// claimList is the world's claims as a list, for the expectations.
func (w *world) claimList() []*corev1.PersistentVolumeClaim {
	out := make([]*corev1.PersistentVolumeClaim, 0, len(w.claims))
	for _, c := range w.claims {
		out = append(out, c)
	}
	return out
}
