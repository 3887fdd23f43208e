package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

// claimOwner maps a claim event to the set that created it, named by upstream's owned-by-asts annotation.
func claimOwner(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetAnnotations()[kruiseappsv1beta1.OwnedByASTSAnnotation]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// createClaims creates the pod's missing claims. A claim still being deleted (its pod was scaled away under
// a Delete retention) holds the pod back until it is gone: the new pod must not mount the old volume.
func (r *Reconciler) createClaims(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, p *corev1.Pod) error {
	n := plan.Ordinal(set.Name, p.Name)
	for i := range set.Spec.VolumeClaimTemplates {
		c := r.newClaim(set, &set.Spec.VolumeClaimTemplates[i], p, n)
		switch existing := w.claims[c.Name]; {
		case existing != nil && existing.DeletionTimestamp != nil:
			return fmt.Errorf("claim %s of pod %s is being deleted", c.Name, p.Name)
		case existing != nil:
			continue
		}
		err := r.Client.Create(ctx, c)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			r.Recorder.Eventf(set, c, corev1.EventTypeWarning, "FailedCreate", "Create",
				"create Claim %s for Pod %s in StatefulSet %s failed error: %v", c.Name, p.Name, set.Name, err)
			return fmt.Errorf("create claim %s: %w", c.Name, err)
		}
		r.claimExpectations.Created(client.ObjectKeyFromObject(set), c.Name)
		r.Recorder.Eventf(set, c, corev1.EventTypeNormal, "SuccessfulCreate", "Create",
			"create Claim %s Pod %s in StatefulSet %s success", c.Name, p.Name, set.Name)
	}
	return nil
}

// newClaim is the claim of template vct for pod n: named as the native StatefulSet names it, labelled with the
// template's labels and the set's selector labels, marked with the set's name, owned as the retention policy
// says.
func (r *Reconciler) newClaim(set *kruiseappsv1beta1.StatefulSet, vct *corev1.PersistentVolumeClaim, p *corev1.Pod, n int32) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: plan.ClaimName(vct.Name, set.Name, n), Namespace: set.Namespace,
			Labels: maps.Clone(vct.Labels), Annotations: maps.Clone(vct.Annotations),
		},
		Spec: *vct.Spec.DeepCopy(),
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	maps.Copy(c.Labels, set.Spec.Selector.MatchLabels)
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[kruiseappsv1beta1.OwnedByASTSAnnotation] = set.Name
	toSet, _ := r.owners(set, false)
	c.OwnerReferences = wantedOwners(c, set, p, toSet, false)
	return c
}

// owners are the owners a pod's claims carry (plan.ClaimOwners); none without the StatefulSetAutoDeletePVC
// gate, which then leaves every claim alone.
func (r *Reconciler) owners(set *kruiseappsv1beta1.StatefulSet, condemned bool) (toSet, toPod bool) {
	if !r.RetainClaims {
		return false, false
	}
	return plan.ClaimOwners(set.Spec.PersistentVolumeClaimRetentionPolicy, condemned)
}

// wantedOwners are c's owner references with the set's and the pod's made as wanted; others stay.
func wantedOwners(c *corev1.PersistentVolumeClaim, set *kruiseappsv1beta1.StatefulSet, p *corev1.Pod, toSet, toPod bool) []metav1.OwnerReference {
	refs := slices.DeleteFunc(slices.Clone(c.OwnerReferences), func(ref metav1.OwnerReference) bool {
		return ref.UID == set.UID || (p != nil && ref.UID == p.UID)
	})
	if toSet {
		refs = append(refs, metav1.OwnerReference{APIVersion: setKind.GroupVersion().String(), Kind: setKind.Kind, Name: set.Name, UID: set.UID})
	}
	if toPod && p != nil && p.UID != "" {
		refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID})
	}
	return refs
}

// syncClaimOwners gives the claims of every pod the owners the retention policy asks for, before the pods
// the set gave up are deleted: a claim owned by its condemned pod goes with it (whenScaled Delete), one owned
// by the set goes with the set (whenDeleted Delete), one owned by neither stays.
func (r *Reconciler) syncClaimOwners(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, in plan.Input) error {
	if !r.RetainClaims || len(set.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	slots := map[int32]bool{}
	for _, n := range plan.Slots(in.Strategy.Start, in.Strategy.Replicas, in.Strategy.Reserved) {
		slots[n] = true
	}
	var errs []error
	for _, p := range w.pods {
		n := plan.Ordinal(set.Name, p.Name)
		if n < 0 || p.DeletionTimestamp != nil {
			continue
		}
		toSet, toPod := r.owners(set, !slots[n])
		errs = append(errs, r.ownClaims(ctx, set, w, p, n, toSet, toPod))
	}
	return errors.Join(errs...)
}

func (r *Reconciler) ownClaims(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, p *corev1.Pod, n int32, toSet, toPod bool) error {
	for _, vct := range set.Spec.VolumeClaimTemplates {
		c := w.claims[plan.ClaimName(vct.Name, set.Name, n)]
		if c == nil || c.DeletionTimestamp != nil {
			continue
		}
		refs := wantedOwners(c, set, p, toSet, toPod)
		if sameOwners(c.OwnerReferences, refs) {
			continue
		}
		next := c.DeepCopy()
		next.OwnerReferences = refs
		err := r.Client.Patch(ctx, next, client.MergeFromWithOptions(c, client.MergeFromWithOptimisticLock{}))
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("set the owners of claim %s: %w", c.Name, err)
		}
		w.claims[c.Name] = next
	}
	return nil
}

func sameOwners(a, b []metav1.OwnerReference) bool {
	key := func(refs []metav1.OwnerReference) []string {
		out := make([]string, 0, len(refs))
		for _, ref := range refs {
			out = append(out, string(ref.UID))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// claimStates are the states of every pod's claims, by ordinal, for claims that follow their templates.
func claimStates(set *kruiseappsv1beta1.StatefulSet, w *world) map[int32]plan.ClaimState {
	templates := make([]*corev1.PersistentVolumeClaim, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		templates[i] = &set.Spec.VolumeClaimTemplates[i]
	}
	out := map[int32]plan.ClaimState{}
	for _, p := range w.pods {
		n := plan.Ordinal(set.Name, p.Name)
		if n < 0 {
			continue
		}
		claims := make([]*corev1.PersistentVolumeClaim, len(templates))
		for i, t := range templates {
			claims[i] = w.claims[plan.ClaimName(t.Name, set.Name, n)]
		}
		out[n] = plan.ClaimsOf(claims, templates)
	}
	return out
}

// resizeClaims expands the planned pods' claims to their templates' storage requests; the storage provider
// then grows the volumes, and the pods update once the claims report it.
func (r *Reconciler) resizeClaims(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, pods []*corev1.Pod) error {
	var errs []error
	for _, p := range pods {
		n := plan.Ordinal(set.Name, p.Name)
		for i := range set.Spec.VolumeClaimTemplates {
			errs = append(errs, r.resizeClaim(ctx, set, w.claims[plan.ClaimName(set.Spec.VolumeClaimTemplates[i].Name, set.Name, n)], &set.Spec.VolumeClaimTemplates[i], p))
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) resizeClaim(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, c, vct *corev1.PersistentVolumeClaim, p *corev1.Pod) error {
	if c == nil || c.DeletionTimestamp != nil || !plan.NeedsExpand(c, vct) {
		return nil
	}
	if !plan.SameButSize(c, vct) {
		r.Recorder.Eventf(set, c, corev1.EventTypeWarning, "FailedUpdatePVC", "Resize",
			"failed to update pvc %s: contains diff other than spec resource, wait pvc to be deleted", c.Name)
		return fmt.Errorf("claim %s differs from its template beyond its size", c.Name)
	}
	next := c.DeepCopy()
	next.Spec.Resources = vct.Spec.Resources
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[kruiseappsv1beta1.OwnedByASTSAnnotation] = set.Name
	if err := r.Client.Patch(ctx, next, client.MergeFrom(c)); err != nil {
		r.Recorder.Eventf(set, c, corev1.EventTypeWarning, "FailedResize", "Resize",
			"resize Claim %s for Pod %s in StatefulSet %s failed error: %v", c.Name, p.Name, set.Name, err)
		return fmt.Errorf("resize claim %s: %w", c.Name, err)
	}
	r.Recorder.Eventf(set, c, corev1.EventTypeNormal, "SuccessfulResize", "Resize",
		"resize Claim %s Pod %s in StatefulSet %s success", c.Name, p.Name, set.Name)
	return nil
}
