package control

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
)

// deploymentCanary is the canary-style control of a Deployment: the stable Deployment stays paused while an
// extra canary Deployment, owned by the BatchRelease, runs the new template and grows batch by batch.
type deploymentCanary struct {
	c client.Client
	t Target
	// creations guards against creating a second canary while the cache does not list the first yet.
	creations *expectations.Expectations
}

// NewDeploymentCanary returns the canary-style control of a Deployment.
func NewDeploymentCanary(c client.Client, t Target) WorkloadControl {
	return &deploymentCanary{c: c, t: t, creations: canaryCreations}
}

func (d *deploymentCanary) get(ctx context.Context) (*appsv1.Deployment, error) {
	stable := &appsv1.Deployment{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: d.t.Namespace, Name: d.t.Ref.Name}, stable); err != nil {
		return nil, wrapGet(err, "Deployment", d.t.Namespace, d.t.Ref.Name)
	}
	return stable, nil
}

// canaries lists this release's canary Deployments.
func (d *deploymentCanary) canaries(ctx context.Context) ([]appsv1.Deployment, error) {
	var list appsv1.DeploymentList
	err := d.c.List(ctx, &list, client.InNamespace(d.t.Namespace),
		client.MatchingLabels{rolloutsv1beta1.CanaryDeploymentLabel: d.t.Ref.Name})
	if err != nil {
		return nil, fmt.Errorf("listing canary Deployments of %s/%s: %w", d.t.Namespace, d.t.Ref.Name, err)
	}
	return releaseCanaries(list.Items, d.t.Owner), nil
}

// replicaSets reads the ReplicaSets of the stable Deployment and of the canary, if there is one.
func (d *deploymentCanary) replicaSets(ctx context.Context, stable, canary *appsv1.Deployment) ([]appsv1.ReplicaSet, error) {
	rss, err := OwnedReplicaSets(ctx, d.c, stable)
	if err != nil || canary == nil {
		return rss, err
	}
	canaryRSs, err := OwnedReplicaSets(ctx, d.c, canary)
	return append(rss, canaryRSs...), err
}

// Read implements WorkloadControl.
func (d *deploymentCanary) Read(ctx context.Context) (*WorkloadInfo, error) {
	stable, err := d.get(ctx)
	if err != nil {
		return nil, err
	}
	canaries, err := d.canaries(ctx)
	if err != nil {
		return nil, err
	}
	canary := matchingCanary(canaries, canaryTemplate(stable, d.t.Plan.PatchPodTemplateMetadata))
	rss, err := d.replicaSets(ctx, stable, canary)
	if err != nil {
		return nil, err
	}
	return canaryInfo(stable, canary, rss, d.t), nil
}

// Initialize implements WorkloadControl: the stable Deployment only gets control-info; the workload webhook
// already paused it.
func (d *deploymentCanary) Initialize(ctx context.Context) error {
	stable, err := d.get(ctx)
	if err != nil {
		return err
	}
	if ControlledBy(stable.Annotations, d.t.Owner) {
		return nil
	}
	patch := map[string]any{}
	setNested(patch, ControlInfo(d.t.Owner), "metadata", "annotations", rolloutsv1beta1.BatchReleaseControlAnnotation)
	return applyMergePatch(ctx, d.c, stable, patch)
}

// UpgradeBatch implements WorkloadControl.
func (d *deploymentCanary) UpgradeBatch(ctx context.Context, batch Batch) error {
	desiredUpdated := batch.DesiredUpdated
	stable, err := d.get(ctx)
	if err != nil {
		return err
	}
	canaries, err := d.canaries(ctx)
	if err != nil {
		return err
	}
	pending := expectations.WaitFor(d.creations, d.creationKey(), canaries) > 0
	canary := matchingCanary(canaries, canaryTemplate(stable, d.t.Plan.PatchPodTemplateMetadata))
	if canary == nil {
		if pending {
			return fmt.Errorf("canary Deployment of %s/%s: %w", d.t.Namespace, d.t.Ref.Name, ErrNotObserved)
		}
		if canary, err = d.create(ctx, stable); err != nil {
			return err
		}
	}
	return applyMergePatch(ctx, d.c, canary, canaryScalePatch(canary, desiredUpdated, batch.Abort))
}

// creationKey names the canary creations of one release of one workload.
func (d *deploymentCanary) creationKey() types.NamespacedName {
	return types.NamespacedName{Namespace: d.t.Namespace, Name: string(d.t.Owner.UID) + "/" + d.t.Ref.Name}
}

func (d *deploymentCanary) create(ctx context.Context, stable *appsv1.Deployment) (*appsv1.Deployment, error) {
	canary := newCanaryDeployment(stable, d.t)
	if err := d.c.Create(ctx, canary); err != nil {
		return nil, fmt.Errorf("creating canary Deployment of %s/%s: %w", stable.Namespace, stable.Name, err)
	}
	d.creations.Created(d.creationKey(), canary.Name)
	return canary, nil
}

// Finalize implements WorkloadControl. The canaries go last, so with WaitResume their pods keep serving until
// the stable Deployment has rolled out.
func (d *deploymentCanary) Finalize(ctx context.Context) (bool, error) {
	stable, err := d.get(ctx)
	if err != nil && !errors.Is(err, ErrWorkloadGone) {
		return false, err
	}
	// A release stopped at a batch leaves the stable Deployment paused: nothing to wait for.
	waits := waitsForResume(d.t) && d.t.Plan.BatchPartition == nil
	if stable != nil {
		if patch := stableFinalizePatch(stable, d.t); len(patch) > 0 {
			if err := applyMergePatch(ctx, d.c, stable, patch); err != nil {
				return false, err
			}
			// The status read with stable predates the patch: judge WaitResume on the next call.
			if waits {
				return false, nil
			}
		} else if waits && !stableRolledOut(stable) {
			return false, nil
		}
	}
	return d.removeCanaries(ctx)
}

// removeCanaries releases the finalizer of every canary of this release and deletes them.
func (d *deploymentCanary) removeCanaries(ctx context.Context) (bool, error) {
	canaries, err := d.canaries(ctx)
	if err != nil {
		return false, err
	}
	for i := range canaries {
		if err := d.removeCanary(ctx, &canaries[i]); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (d *deploymentCanary) removeCanary(ctx context.Context, canary *appsv1.Deployment) error {
	if controllerutil.ContainsFinalizer(canary, rolloutsv1beta1.CanaryDeploymentFinalizer) {
		before := canary.DeepCopy()
		controllerutil.RemoveFinalizer(canary, rolloutsv1beta1.CanaryDeploymentFinalizer)
		patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
		if err := d.c.Patch(ctx, canary, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("removing the finalizer of canary Deployment %s/%s: %w", canary.Namespace, canary.Name, err)
		}
	}
	if canary.DeletionTimestamp != nil {
		return nil
	}
	if err := d.c.Delete(ctx, canary); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting canary Deployment %s/%s: %w", canary.Namespace, canary.Name, err)
	}
	return nil
}
