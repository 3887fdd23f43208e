package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
)

// world is what one reconcile reads about a CloneSet: the pods, claims and revisions it controls.
type world struct {
	selector labels.Selector
	// pods are every controlled pod, terminating ones included. They share their maps and slices with the
	// informer's cache: never change one in place; change a copy and assign it (patchPod does).
	pods      []*corev1.Pod
	claims    []*corev1.PersistentVolumeClaim
	revisions []*appsv1.ControllerRevision
	// wake is how soon the reconcile wants to look again for a timer of its own (0: none); refresh sets it
	// from several goroutines.
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

// selectorOf parses spec.selector. The webhook rejects a bad or empty one; without the webhook the
// CloneSet reports it rather than adopting every pod of its namespace.
func selectorOf(cs *kruiseappsv1alpha1.CloneSet) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(cs.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	if sel.Empty() {
		return nil, errors.New("spec.selector: Required value: an empty selector would select every pod of the namespace")
	}
	return sel, nil
}

func (r *Reconciler) gather(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, sel labels.Selector) (*world, error) {
	w := &world{selector: sel}
	pods, err := r.claimPods(ctx, cs, sel)
	if err != nil {
		return nil, err
	}
	w.pods = pods
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(cs.Namespace), client.HasLabels{kruiseappsv1alpha1.CloneSetInstanceID}); err != nil {
		return nil, fmt.Errorf("list claims: %w", err)
	}
	w.claims = controlled(cs, claims.Items)
	revs := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, revs, client.InNamespace(cs.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list revisions: %w", err)
	}
	w.revisions = controlled(cs, revs.Items)
	return w, nil
}

// controlled returns pointers to the items whose controller is cs.
func controlled[T any, PT interface {
	*T
	metav1.Object
}](cs *kruiseappsv1alpha1.CloneSet, items []T) []PT {
	var out []PT
	for i := range items {
		obj := PT(&items[i])
		if ref := metav1.GetControllerOf(obj); ref != nil && ref.UID == cs.UID {
			out = append(out, obj)
		}
	}
	return out
}

// usedIDs are the instance ids of every pod (terminating ones still hold their claims).
func (w *world) usedIDs() sets.Set[string] {
	ids := sets.New[string]()
	for _, p := range w.pods {
		ids.Insert(p.Labels[kruiseappsv1alpha1.CloneSetInstanceID])
	}
	return ids
}

// freeIDs are the instance ids of claims whose pod is gone, sorted.
func (w *world) freeIDs() []string {
	used := w.usedIDs()
	free := sets.New[string]()
	for _, c := range w.claims {
		if id := c.Labels[kruiseappsv1alpha1.CloneSetInstanceID]; id != "" && !used.Has(id) && c.DeletionTimestamp == nil {
			free.Insert(id)
		}
	}
	return sets.List(free)
}

// terminatingWithClaims counts the terminating pods whose claims are kept for their replacement.
func (w *world) terminatingWithClaims() int32 {
	live := sets.New[string]()
	for _, c := range w.claims {
		if c.DeletionTimestamp == nil {
			live.Insert(c.Labels[kruiseappsv1alpha1.CloneSetInstanceID])
		}
	}
	var n int32
	for _, p := range w.pods {
		if p.DeletionTimestamp != nil && live.Has(p.Labels[kruiseappsv1alpha1.CloneSetInstanceID]) {
			n++
		}
	}
	return n
}

func (r *Reconciler) input(cs *kruiseappsv1alpha1.CloneSet, w *world, revs *revisions) plan.Input {
	in := plan.Input{
		Now:              r.Clock.Now(),
		Strategy:         plan.Resolve(cs),
		UpdateRevision:   revs.update.Name,
		CurrentRevision:  revs.current.Name,
		Pods:             plan.Active(w.pods),
		PodsToDelete:     map[string]bool{},
		PriorityStrategy: cs.Spec.UpdateStrategy.PriorityStrategy,
		ScatterStrategy:  cs.Spec.UpdateStrategy.ScatterStrategy,
	}
	for _, name := range cs.Spec.ScaleStrategy.PodsToDelete {
		in.PodsToDelete[name] = true
	}
	if !cs.Spec.ScaleStrategy.DisablePVCReuse && len(cs.Spec.VolumeClaimTemplates) > 0 {
		in.FreeIDs, in.Terminating = w.freeIDs(), w.terminatingWithClaims()
	}
	sort.SliceStable(in.Pods, func(i, j int) bool { return in.Pods[i].Name < in.Pods[j].Name })
	return in
}

// randomID is upstream's instance id: 5 random characters from k8s' unambiguous alphabet.
func randomID() string { return utilrand.String(5) }
