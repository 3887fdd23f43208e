package control

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Defaults the API gives a Deployment, saved when the Deployment leaves them unset.
var (
	defaultDeploymentSurge = intstr.FromString("25%")
	defaultProgressSeconds = int32(600)
)

// deploymentBlueGreen is the blue-green control of an apps/v1 Deployment.
type deploymentBlueGreen struct {
	c client.Client
	t Target
}

// NewDeploymentBlueGreen is the Factory of the blue-green control of apps/v1 Deployments.
func NewDeploymentBlueGreen(c client.Client, t Target) WorkloadControl {
	return &deploymentBlueGreen{c: c, t: t}
}

func (b *deploymentBlueGreen) get(ctx context.Context) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: b.t.Namespace, Name: b.t.Ref.Name}, d); err != nil {
		return nil, wrapGet(err, "Deployment", b.t.Namespace, b.t.Ref.Name)
	}
	return d, nil
}

// replicaSets lists the ReplicaSets d controls.
func (b *deploymentBlueGreen) replicaSets(ctx context.Context, d *appsv1.Deployment) ([]appsv1.ReplicaSet, error) {
	return OwnedReplicaSets(ctx, b.c, d)
}

// Read implements WorkloadControl: counts come from the new ReplicaSet, whose ready (not available) pods
// are the batch's, since the inflated minReadySeconds keeps them from ever being available.
func (b *deploymentBlueGreen) Read(ctx context.Context) (*WorkloadInfo, error) {
	d, err := b.get(ctx)
	if err != nil {
		return nil, err
	}
	rss, err := b.replicaSets(ctx, d)
	if err != nil {
		return nil, err
	}
	return partitionDeploymentInfo(d, rss, b.t.Owner)
}

// Initialize implements WorkloadControl: HPAs off, stable pods held, then the Deployment in one patch that
// writes control-info last of all, so that an interrupted Initialize runs again whole.
func (b *deploymentBlueGreen) Initialize(ctx context.Context) error {
	d, err := b.get(ctx)
	if err != nil {
		return err
	}
	if blueGreenInitialized(d.Annotations, b.t.Owner) {
		return nil
	}
	patch, err := deploymentBlueGreenInitPatch(d, b.t.Owner)
	if err != nil {
		return err
	}
	if err := disableHPAs(ctx, b.c, b.t); err != nil {
		return err
	}
	if err := b.holdStableReplicaSet(ctx, d); err != nil {
		return err
	}
	return applyMergePatch(ctx, b.c, d, patch)
}

// holdStableReplicaSet inflates the stable ReplicaSet's minReadySeconds so that its pods count as
// unavailable: should the release be rolled back, the stable ReplicaSet becomes the new one again, and
// kube-controller-manager must not delete the new pods before traffic is back on the stable ones.
func (b *deploymentBlueGreen) holdStableReplicaSet(ctx context.Context, d *appsv1.Deployment) error {
	rss, err := b.replicaSets(ctx, d)
	if err != nil {
		return err
	}
	rs := stableReplicaSet(d, rss)
	if rs == nil || rs.Spec.MinReadySeconds == rolloutsv1beta1.MaxReadySeconds {
		return nil
	}
	patch := map[string]any{}
	setNested(patch, int64(rolloutsv1beta1.MaxReadySeconds), minReadySecondsPath...)
	return applyMergePatch(ctx, b.c, rs, patch)
}

// UpgradeBatch implements WorkloadControl: the surge grows to desiredUpdated and the Deployment rolls. An
// aborted release's batch takes the new pods away instead (deploymentBlueGreenAbort).
func (b *deploymentBlueGreen) UpgradeBatch(ctx context.Context, batch Batch) error {
	d, err := b.get(ctx)
	if err != nil {
		return err
	}
	rss, err := b.replicaSets(ctx, d)
	if err != nil {
		return err
	}
	if batch.Abort {
		if !ControlledBy(d.Annotations, b.t.Owner) {
			return notReady("deployment", d.Namespace, d.Name, "annotation %s does not name this release", rolloutsv1beta1.BatchReleaseControlAnnotation)
		}
		w := deploymentBlueGreenAbort(d, rss)
		if w.obj == nil {
			return nil
		}
		return applyMergePatch(ctx, b.c, w.obj, w.patch)
	}
	patch, err := deploymentBlueGreenUpgradePatch(d, b.t.Owner, batch.DesiredUpdated, newReplicaSetIdle(d, rss))
	if err != nil {
		return err
	}
	return applyMergePatch(ctx, b.c, d, patch)
}

// Finalize implements WorkloadControl.
func (b *deploymentBlueGreen) Finalize(ctx context.Context) (bool, error) {
	d, err := b.get(ctx)
	if err != nil {
		return finishGone(ctx, b.c, b.t, err)
	}
	if controlledByOther(d.Annotations, b.t.Owner) {
		return true, nil
	}
	patch, err := deploymentBlueGreenFinalizePatch(d, b.t)
	if err != nil {
		return false, err
	}
	return finishBlueGreen(ctx, b.c, b.t, d, patch, stableRolledOut(d))
}

// stableReplicaSet is the ReplicaSet of the stable revision (see deploymentStableRevision), nil when there
// is none.
func stableReplicaSet(d *appsv1.Deployment, rss []appsv1.ReplicaSet) *appsv1.ReplicaSet {
	hash := deploymentStableRevision(d, rss, "")
	for i := range rss {
		if hash != "" && rss[i].Labels[rolloutsv1beta1.PodTemplateHashLabelKey] == hash {
			return &rss[i]
		}
	}
	return nil
}

// deploymentOriginal is what Initialize saves of d, with the API defaults for unset fields.
func deploymentOriginal(d *appsv1.Deployment) rolloutsv1beta1.OriginalDeploymentStrategy {
	s := rolloutsv1beta1.OriginalDeploymentStrategy{
		MaxSurge:                ptr.To(defaultDeploymentSurge),
		MaxUnavailable:          ptr.To(defaultDeploymentSurge),
		MinReadySeconds:         ownMinReadySeconds(d.Spec.MinReadySeconds),
		ProgressDeadlineSeconds: ptr.To(ptr.Deref(d.Spec.ProgressDeadlineSeconds, defaultProgressSeconds)),
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			s.MaxSurge = ptr.To(*ru.MaxSurge)
		}
		if ru.MaxUnavailable != nil {
			s.MaxUnavailable = ptr.To(*ru.MaxUnavailable)
		}
	}
	return s
}

// deploymentBlueGreenInitPatch saves d's settings (unless a former release saved them already), writes
// control-info and switches d to a rolling update of one surge pod that never makes a pod available.
func deploymentBlueGreenInitPatch(d *appsv1.Deployment, owner metav1.OwnerReference) (map[string]any, error) {
	_, saved, err := OriginalStrategyFrom(d.Annotations)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	patch := map[string]any{}
	if !saved {
		setNested(patch, originalStrategyJSON(deploymentOriginal(d)), originalStrategyPath...)
	}
	setNested(patch, ControlInfo(owner), controlInfoPath...)
	setNested(patch, map[string]any{
		"type":          string(appsv1.RollingUpdateDeploymentStrategyType),
		"rollingUpdate": map[string]any{"maxSurge": intstr.FromInt32(1), "maxUnavailable": intstr.FromInt32(0)},
	}, "spec", "strategy")
	setNested(patch, int64(rolloutsv1beta1.MaxReadySeconds), minReadySecondsPath...)
	setNested(patch, int64(rolloutsv1beta1.MaxProgressSeconds), "spec", "progressDeadlineSeconds")
	return patch, nil
}

// deploymentBlueGreenReady checks that d is the way Initialize left it.
func deploymentBlueGreenReady(d *appsv1.Deployment, owner metav1.OwnerReference) error {
	fail := func(format string, args ...any) error {
		return notReady("deployment", d.Namespace, d.Name, format, args...)
	}
	switch {
	case !ControlledBy(d.Annotations, owner):
		return fail("annotation %s does not name this release", rolloutsv1beta1.BatchReleaseControlAnnotation)
	case d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType:
		return fail("spec.strategy.type is %q, want RollingUpdate", d.Spec.Strategy.Type)
	case d.Spec.Strategy.RollingUpdate == nil:
		return fail("spec.strategy.rollingUpdate is not set")
	case d.Spec.MinReadySeconds != rolloutsv1beta1.MaxReadySeconds:
		return fail("spec.minReadySeconds is %d, want %d", d.Spec.MinReadySeconds, rolloutsv1beta1.MaxReadySeconds)
	case ptr.Deref(d.Spec.ProgressDeadlineSeconds, 0) != rolloutsv1beta1.MaxProgressSeconds:
		return fail("spec.progressDeadlineSeconds is not %d", rolloutsv1beta1.MaxProgressSeconds)
	}
	return nil
}

// deploymentBlueGreenUpgradePatch raises d's surge to desiredUpdated new pods, keeps maxUnavailable at 0 and
// resumes d, which the workload webhook pauses on a new revision. It never lowers the surge while new pods
// run; over an idle new ReplicaSet (no new pod yet, or none left by an abort) the surge is the batch.
func deploymentBlueGreenUpgradePatch(d *appsv1.Deployment, owner metav1.OwnerReference, desiredUpdated int32, idle bool) (map[string]any, error) {
	if err := deploymentBlueGreenReady(d, owner); err != nil {
		return nil, err
	}
	ru := d.Spec.Strategy.RollingUpdate
	patch := map[string]any{}
	replicas := partitionReplicasOf(d)
	if want := max(desiredUpdated, 1); idle && surgeCount(ru.MaxSurge, replicas) > want {
		setNested(patch, intstr.FromInt32(want), "spec", "strategy", "rollingUpdate", "maxSurge")
	} else if surge, raise := raisedSurge(ru.MaxSurge, replicas, desiredUpdated); raise {
		setNested(patch, surge, "spec", "strategy", "rollingUpdate", "maxSurge")
	}
	if !isZeroInt(ru.MaxUnavailable) {
		setNested(patch, intstr.FromInt32(0), "spec", "strategy", "rollingUpdate", "maxUnavailable")
	}
	if d.Spec.Paused {
		setNested(patch, false, "spec", "paused")
	}
	return patch, nil
}

// deploymentBlueGreenFinalizePatch restores d's saved settings and removes the release's markers. d is
// resumed, unless a cancelled release keeps it frozen as the last batch left it.
func deploymentBlueGreenFinalizePatch(d *appsv1.Deployment, t Target) (map[string]any, error) {
	if controlledByOther(d.Annotations, t.Owner) {
		return nil, nil
	}
	original, saved, err := OriginalStrategyFrom(d.Annotations)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	patch := map[string]any{}
	if saved {
		restoreDeploymentSettings(patch, original)
		setNested(patch, nil, originalStrategyPath...)
	}
	if _, ok := d.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]; ok {
		setNested(patch, nil, controlInfoPath...)
	}
	if _, ok := d.Labels[rolloutsv1beta1.DeploymentStableRevisionLabel]; ok {
		setNested(patch, nil, "metadata", "labels", rolloutsv1beta1.DeploymentStableRevisionLabel)
	}
	setFinalPause(patch, d.Spec.Paused, releaseMarked(d.Annotations), t, "spec", "paused")
	return patch, nil
}

func restoreDeploymentSettings(patch map[string]any, s rolloutsv1beta1.OriginalDeploymentStrategy) {
	setNested(patch, map[string]any{
		"type": string(appsv1.RollingUpdateDeploymentStrategyType),
		"rollingUpdate": map[string]any{
			"maxSurge":       ptr.Deref(s.MaxSurge, defaultDeploymentSurge),
			"maxUnavailable": ptr.Deref(s.MaxUnavailable, defaultDeploymentSurge),
		},
	}, "spec", "strategy")
	setNested(patch, int64(ownMinReadySeconds(s.MinReadySeconds)), minReadySecondsPath...)
	var deadline any // unset: the API defaults it again
	if s.ProgressDeadlineSeconds != nil {
		deadline = int64(*s.ProgressDeadlineSeconds)
	}
	setNested(patch, deadline, "spec", "progressDeadlineSeconds")
}

// setFinalPause writes the pause a finalised workload ends with at path: kept (set) when a cancelled release
// keeps the workload frozen, otherwise cleared.
func setFinalPause(patch map[string]any, paused, marked bool, t Target, path ...string) {
	switch {
	case keepsFrozen(t):
		if marked && !paused {
			setNested(patch, true, path...)
		}
	case paused:
		setNested(patch, false, path...)
	}
}
