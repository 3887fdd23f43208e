package control

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Defaults the CloneSet controller applies to an unset maxSurge and maxUnavailable, saved when unset.
var (
	defaultCloneSetSurge       = intstr.FromString("0%")
	defaultCloneSetUnavailable = intstr.FromString("20%")
)

var cloneSetStrategyPath = []string{"spec", "updateStrategy"}

// cloneSetBlueGreen is the blue-green control of a kruise CloneSet. The workload webhook's partition "100%"
// holds the new revision back until the first batch clears it.
type cloneSetBlueGreen struct {
	c client.Client
	t Target
}

// NewCloneSetBlueGreen is the Factory of the blue-green control of apps.kruise.io/v1alpha1 CloneSets.
func NewCloneSetBlueGreen(c client.Client, t Target) WorkloadControl {
	return &cloneSetBlueGreen{c: c, t: t}
}

func (b *cloneSetBlueGreen) get(ctx context.Context) (*kruiseappsv1alpha1.CloneSet, error) {
	cs := &kruiseappsv1alpha1.CloneSet{}
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: b.t.Namespace, Name: b.t.Ref.Name}, cs); err != nil {
		return nil, wrapGet(err, "CloneSet", b.t.Namespace, b.t.Ref.Name)
	}
	return cs, nil
}

// Read implements WorkloadControl.
func (b *cloneSetBlueGreen) Read(ctx context.Context) (*WorkloadInfo, error) {
	cs, err := b.get(ctx)
	if err != nil {
		return nil, err
	}
	return cloneSetInfo(cs, b.t), nil
}

// Initialize implements WorkloadControl: HPAs off, then the CloneSet in one patch.
func (b *cloneSetBlueGreen) Initialize(ctx context.Context) error {
	cs, err := b.get(ctx)
	if err != nil {
		return err
	}
	if blueGreenInitialized(cs.Annotations, b.t.Owner) {
		return nil
	}
	patch, err := cloneSetBlueGreenInitPatch(cs, b.t.Owner)
	if err != nil {
		return err
	}
	if err := disableHPAs(ctx, b.c, b.t); err != nil {
		return err
	}
	return applyMergePatch(ctx, b.c, cs, patch)
}

// UpgradeBatch implements WorkloadControl; an aborted release's batch takes the new pods away.
func (b *cloneSetBlueGreen) UpgradeBatch(ctx context.Context, batch Batch) error {
	desiredUpdated := batch.DesiredUpdated
	cs, err := b.get(ctx)
	if err != nil {
		return err
	}
	if batch.Abort {
		return b.abort(ctx, cs)
	}
	patch, err := cloneSetBlueGreenUpgradePatch(cs, b.t.Owner, desiredUpdated)
	if err != nil {
		return err
	}
	return applyMergePatch(ctx, b.c, cs, patch)
}

// Finalize implements WorkloadControl.
func (b *cloneSetBlueGreen) Finalize(ctx context.Context) (bool, error) {
	cs, err := b.get(ctx)
	if err != nil {
		return finishGone(ctx, b.c, b.t, err)
	}
	if controlledByOther(cs.Annotations, b.t.Owner) {
		return true, nil
	}
	patch, err := cloneSetBlueGreenFinalizePatch(cs, b.t)
	if err != nil {
		return false, err
	}
	return finishBlueGreen(ctx, b.c, b.t, cs, patch, cloneSetResumed(cs))
}

// cloneSetOriginal is what Initialize saves of cs, with the CloneSet defaults for unset fields.
func cloneSetOriginal(cs *kruiseappsv1alpha1.CloneSet) rolloutsv1beta1.OriginalDeploymentStrategy {
	us := cs.Spec.UpdateStrategy
	return rolloutsv1beta1.OriginalDeploymentStrategy{
		MaxSurge:        ptr.To(ptr.Deref(us.MaxSurge, defaultCloneSetSurge)),
		MaxUnavailable:  ptr.To(ptr.Deref(us.MaxUnavailable, defaultCloneSetUnavailable)),
		MinReadySeconds: ownMinReadySeconds(cs.Spec.MinReadySeconds),
	}
}

// cloneSetBlueGreenInitPatch saves cs's settings (unless a former release saved them already), writes
// control-info and sets one surge pod that never becomes available. The pause is cleared: the partition
// holds the release instead.
func cloneSetBlueGreenInitPatch(cs *kruiseappsv1alpha1.CloneSet, owner metav1.OwnerReference) (map[string]any, error) {
	_, saved, err := OriginalStrategyFrom(cs.Annotations)
	if err != nil {
		return nil, fmt.Errorf("CloneSet %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	patch := map[string]any{}
	if !saved {
		setNested(patch, originalStrategyJSON(cloneSetOriginal(cs)), originalStrategyPath...)
	}
	setNested(patch, ControlInfo(owner), controlInfoPath...)
	setNested(patch, map[string]any{
		"paused": false, "maxSurge": intstr.FromInt32(1), "maxUnavailable": intstr.FromInt32(0),
	}, cloneSetStrategyPath...)
	setNested(patch, int64(rolloutsv1beta1.MaxReadySeconds), minReadySecondsPath...)
	return patch, nil
}

// cloneSetBlueGreenReady checks that cs is the way Initialize left it and recreates pods on update: an
// in-place update would change the old pods instead of surging new ones.
func cloneSetBlueGreenReady(cs *kruiseappsv1alpha1.CloneSet, owner metav1.OwnerReference) error {
	fail := func(format string, args ...any) error {
		return notReady("CloneSet", cs.Namespace, cs.Name, format, args...)
	}
	strategy := cs.Spec.UpdateStrategy.Type
	switch {
	case !ControlledBy(cs.Annotations, owner):
		return fail("annotation %s does not name this release", rolloutsv1beta1.BatchReleaseControlAnnotation)
	case strategy != "" && strategy != kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType:
		return fail("spec.updateStrategy.type is %q, want ReCreate", strategy)
	case cs.Spec.MinReadySeconds != rolloutsv1beta1.MaxReadySeconds:
		return fail("spec.minReadySeconds is %d, want %d", cs.Spec.MinReadySeconds, rolloutsv1beta1.MaxReadySeconds)
	}
	return nil
}

// cloneSetBlueGreenUpgradePatch clears the partition and raises the surge to desiredUpdated new pods; it
// never lowers the surge.
func cloneSetBlueGreenUpgradePatch(cs *kruiseappsv1alpha1.CloneSet, owner metav1.OwnerReference, desiredUpdated int32) (map[string]any, error) {
	if err := cloneSetBlueGreenReady(cs, owner); err != nil {
		return nil, err
	}
	us := cs.Spec.UpdateStrategy
	patch := map[string]any{}
	if us.Partition != nil {
		setNested(patch, nil, cloneSetPartitionPath...)
	}
	if surge, raise := raisedSurge(us.MaxSurge, cloneSetReplicas(cs), desiredUpdated); raise {
		setNested(patch, surge, append(cloneSetStrategyPath, "maxSurge")...)
	}
	return patch, nil
}

// cloneSetBlueGreenFinalizePatch restores cs's saved settings and removes the release's markers. cs is
// released (partition and pause cleared), unless a cancelled release keeps it frozen as the last batch left
// it.
func cloneSetBlueGreenFinalizePatch(cs *kruiseappsv1alpha1.CloneSet, t Target) (map[string]any, error) {
	if controlledByOther(cs.Annotations, t.Owner) {
		return nil, nil
	}
	original, saved, err := OriginalStrategyFrom(cs.Annotations)
	if err != nil {
		return nil, fmt.Errorf("CloneSet %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	patch := map[string]any{}
	if saved {
		restoreCloneSetSettings(patch, original)
		setNested(patch, nil, originalStrategyPath...)
	}
	if _, ok := cs.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]; ok {
		setNested(patch, nil, controlInfoPath...)
	}
	us := cs.Spec.UpdateStrategy
	// A defaulted partition of 0 holds nothing back; removing it again would patch forever.
	if p := us.Partition; !keepsFrozen(t) && p != nil && cloneSetStableCount(p, cloneSetReplicas(cs)) > 0 {
		setNested(patch, nil, cloneSetPartitionPath...)
	}
	setFinalPause(patch, us.Paused, releaseMarked(cs.Annotations), t, append(cloneSetStrategyPath, "paused")...)
	return patch, nil
}

func restoreCloneSetSettings(patch map[string]any, s rolloutsv1beta1.OriginalDeploymentStrategy) {
	var surge, unavailable any // unset: the CloneSet defaults apply again
	if s.MaxSurge != nil {
		surge = *s.MaxSurge
	}
	if s.MaxUnavailable != nil {
		unavailable = *s.MaxUnavailable
	}
	setNested(patch, surge, append(cloneSetStrategyPath, "maxSurge")...)
	setNested(patch, unavailable, append(cloneSetStrategyPath, "maxUnavailable")...)
	setNested(patch, int64(ownMinReadySeconds(s.MinReadySeconds)), minReadySecondsPath...)
}
