// Package podclaim claims a workload's pods as kube's workload controllers do: the pods it controls that its
// selector (or membership rule) no longer takes are released, and orphans it takes are adopted, such as the
// pods of a native workload deleted with --cascade=orphan to move to its Kruise counterpart. Every workload
// module claims through it, each with its own pod index.
package podclaim

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
)

// orphanKey is the index value of pods without a controller.
const orphanKey = "none"

// ControllerIndex indexes pods by their controller's UID. Every module that claims pods reads this one index:
// one per module would hold the same keys, and be kept up to date on every pod event, once per module.
const ControllerIndex = "podclaim.flotilla.dev/controller-uid"

// IndexPods indexes the manager's pods by their controller's UID (ControllerIndex), so that a workload lists its
// own pods (including those its selector stopped matching) and the orphans, never the rest of the namespace.
// Every module may call it; the index is made once.
func IndexPods(mgr manager.Manager) (*cacheindex.Pods, error) {
	return cacheindex.IndexPods(mgr, ControllerIndex, controllerKey)
}

// FromClient reads ControllerIndex through c, for a controller set up without IndexPods.
func FromClient(c client.Client) *cacheindex.Pods {
	return cacheindex.FromClient(c, ControllerIndex)
}

func controllerKey(pod *corev1.Pod) []string {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return []string{string(ref.UID)}
	}
	return []string{orphanKey}
}

// Claimer claims the pods of one workload kind.
type Claimer[T client.Object] struct {
	// Kind is the workload's kind, as its pods' controller references name it.
	Kind schema.GroupVersionKind
	// Recorder records SuccessfulAdopt and SuccessfulRelease on the workload.
	Recorder events.EventRecorder
	// Patch writes change to a pod of owner the way the controller writes its pods (with its expectations).
	Patch func(ctx context.Context, owner T, p *corev1.Pod, change func(*corev1.Pod) bool) error
	// Member narrows the pods the selector matches to those that belong to owner; nil takes them all.
	Member func(owner T, p *corev1.Pod) bool
	// Released says in the release event why a pod no longer belongs.
	Released string
}

// Claim returns the pods owner controls, after releasing and adopting as the package says. The pods are
// shallow copies of the cache's: a caller copies a pod before it changes one. A workload being deleted
// claims what it has and changes nothing: its pods go with it.
func (c Claimer[T]) Claim(ctx context.Context, pods *cacheindex.Pods, owner T, sel labels.Selector) ([]*corev1.Pod, error) {
	owned, err := pods.Get(ctx, owner.GetNamespace(), string(owner.GetUID()), nil)
	if err != nil {
		return nil, err
	}
	orphans, err := pods.Get(ctx, owner.GetNamespace(), orphanKey, sel)
	if err != nil {
		return nil, err
	}
	if owner.GetDeletionTimestamp() != nil {
		return cacheindex.Shallow(owned), nil
	}
	kept, releaseErr := c.release(ctx, owner, sel, cacheindex.Shallow(owned))
	adopted, adoptErr := c.adopt(ctx, owner, sel, cacheindex.Shallow(orphans))
	return append(kept, adopted...), errors.Join(releaseErr, adoptErr)
}

func (c Claimer[T]) belongs(owner T, sel labels.Selector, p *corev1.Pod) bool {
	return sel.Matches(labels.Set(p.Labels)) && (c.Member == nil || c.Member(owner, p))
}

// release drops owner's references from the live pods that no longer belong; they keep running, no longer
// counted or managed.
func (c Claimer[T]) release(ctx context.Context, owner T, sel labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	kept := make([]*corev1.Pod, 0, len(pods))
	var errs []error
	for _, p := range pods {
		if p.DeletionTimestamp != nil || c.belongs(owner, sel, p) {
			kept = append(kept, p)
			continue
		}
		err := c.Patch(ctx, owner, p, func(p *corev1.Pod) bool { return disown(p, owner.GetUID()) })
		switch {
		case raced(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("release: %w", err))
		default:
			c.Recorder.Eventf(owner, p, corev1.EventTypeNormal, "SuccessfulRelease", "Release", "released pod %s: %s", p.Name, c.Released)
		}
	}
	return kept, errors.Join(errs...)
}

// adopt makes owner the controller of the orphans that belong to it. Pods being deleted are left alone.
func (c Claimer[T]) adopt(ctx context.Context, owner T, sel labels.Selector, orphans []*corev1.Pod) ([]*corev1.Pod, error) {
	var adopted []*corev1.Pod
	var errs []error
	for _, p := range orphans {
		if metav1.GetControllerOf(p) != nil || p.DeletionTimestamp != nil || !c.belongs(owner, sel, p) {
			continue
		}
		err := c.Patch(ctx, owner, p, func(p *corev1.Pod) bool {
			p.OwnerReferences = append(slices.Clone(p.OwnerReferences), *metav1.NewControllerRef(owner, c.Kind))
			return true
		})
		switch {
		case raced(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("adopt: %w", err))
		default:
			c.Recorder.Eventf(owner, p, corev1.EventTypeNormal, "SuccessfulAdopt", "Adopt", "adopted orphan pod %s", p.Name)
			adopted = append(adopted, p)
		}
	}
	return adopted, errors.Join(errs...)
}

// raced: the pod went or changed meanwhile (perhaps adopted by another); the next reconcile looks again.
func raced(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsConflict(err)
}

// disown removes the owner's references from the pod; other owners stay.
func disown(p *corev1.Pod, uid types.UID) bool {
	refs := slices.DeleteFunc(slices.Clone(p.OwnerReferences), func(ref metav1.OwnerReference) bool { return ref.UID == uid })
	changed := len(refs) != len(p.OwnerReferences)
	p.OwnerReferences = refs
	return changed
}
