package deployment

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/workloads/jsonpatch"
)

// scalingReason is the event reason kube-controller-manager uses for the same writes.
const scalingReason = "ScalingReplicaSet"

// apply writes the plan's steps in order. It stops early, reporting applied=false, when the cache
// turns out stale (a conflict, or a ReplicaSet that already exists): the event that brings the cache up
// to date triggers the next reconcile, which plans again from the truth.
func (r *Reconciler) apply(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet,
	old []*appsv1.ReplicaSet, plan Plan) (applied bool, err error) {
	sets := map[string]*appsv1.ReplicaSet{}
	for _, rs := range old {
		sets[rs.Name] = rs
	}
	if newRS != nil {
		sets[newRS.Name] = newRS
	}
	for _, step := range plan.Steps {
		var written *appsv1.ReplicaSet
		if step.Create {
			written, err = r.create(ctx, d, old, step, plan)
		} else {
			written, err = r.scale(ctx, d, sets[step.Name], step, plan)
		}
		if err != nil || written == nil {
			return false, err
		}
		sets[step.Name] = written
		r.expect(d, written, step.Create)
	}
	return true, nil
}

// create creates the new ReplicaSet. A ReplicaSet of that name that d controls with d's template is
// the one an earlier reconcile created; any other is a hash collision, which bumps d's collision count
// as kube-controller-manager does, so that the next reconcile hashes to another name.
func (r *Reconciler) create(ctx context.Context, d *appsv1.Deployment, old []*appsv1.ReplicaSet, step Step,
	plan Plan) (*appsv1.ReplicaSet, error) {
	rs := newReplicaSet(d, old, step, plan)
	err := r.Client.Create(ctx, rs)
	if err == nil {
		r.scaled(d, rs, step)
		return rs, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating replica set %s: %w", klog.KObj(rs), err)
	}
	existing := &appsv1.ReplicaSet{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(rs), existing); err != nil {
		return nil, fmt.Errorf("getting replica set %s: %w", klog.KObj(rs), err)
	}
	if ref := metav1.GetControllerOf(existing); ref != nil && ref.UID == d.UID &&
		control.EqualIgnoreHashAndBatch(&existing.Spec.Template, &d.Spec.Template) {
		r.expect(d, existing, true)
		return nil, nil
	}
	return nil, r.bumpCollisionCount(ctx, d)
}

func (r *Reconciler) bumpCollisionCount(ctx context.Context, d *appsv1.Deployment) error {
	want := d.DeepCopy()
	want.Status.CollisionCount = ptr.To(ptr.Deref(d.Status.CollisionCount, 0) + 1)
	ctrl.LoggerFrom(ctx).Info("Found a hash collision, bumping the collision count",
		"collisionCount", *want.Status.CollisionCount)
	base := client.MergeFromWithOptions(d, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Status().Patch(ctx, want, base); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("bumping the collision count of %s: %w", klog.KObj(d), err)
	}
	return nil
}

// scale writes a ReplicaSet's size, replica annotations and the step's batch labels by a JSON patch that
// tests the size (and the stamped labels) the plan read; a failed test returns nil, nil (see apply). Unlike a resourceVersion guard it does not lose to
// kube-controller-manager's status writes, which come with every pod that starts or stops.
func (r *Reconciler) scale(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, step Step,
	plan Plan) (*appsv1.ReplicaSet, error) {
	if rs == nil {
		return nil, fmt.Errorf("plan step %+v names no known replica set", step)
	}
	ops := scaleOps(rs, step.To, plan)
	if step.Relabel {
		ops = append(ops, control.StampOps(control.StampedBatchLabels(&rs.Spec.Template, &d.Spec.Template), step.Labels)...)
	}
	written := rs.DeepCopy()
	err := jsonpatch.Apply(ctx, r.Client, appsv1.Resource("replicasets"), written, ops)
	if apierrors.IsConflict(err) {
		ctrl.LoggerFrom(ctx).V(1).Info("ReplicaSet resized since it was read, replanning", "ReplicaSet", klog.KObj(rs))
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scaling replica set %s: %w", klog.KObj(rs), err)
	}
	r.scaled(d, written, step)
	return written, nil
}

// scaleOps test spec.replicas against what the plan read, then set it and the replica annotations.
func scaleOps(rs *appsv1.ReplicaSet, to int32, plan Plan) []jsonpatch.Op {
	ops := []jsonpatch.Op{
		jsonpatch.Test("/spec/replicas", rs.Spec.Replicas),
		jsonpatch.Replace("/spec/replicas", to),
	}
	if rs.Annotations == nil {
		ops = append(ops, jsonpatch.Add("/metadata/annotations", map[string]string{}))
	}
	annotate := func(key string, n int32) {
		ops = append(ops, jsonpatch.Add(control.AnnotationPath(key), strconv.Itoa(int(n))))
	}
	annotate(desiredReplicasAnnotation, plan.DesiredReplicas)
	annotate(maxReplicasAnnotation, plan.MaxReplicas)
	return ops
}

// scaled records the event kube-controller-manager records for a scaling write.
func (r *Reconciler) scaled(d *appsv1.Deployment, rs *appsv1.ReplicaSet, step Step) {
	if step.From == step.To {
		return
	}
	direction := "up"
	if step.To < step.From {
		direction = "down"
	}
	r.Recorder.Eventf(d, rs, corev1.EventTypeNormal, scalingReason, "Scale",
		"Scaled %s replica set %s from %d to %d", direction, rs.Name, step.From, step.To)
}

// patchExtraStatus writes the deployment-extra-status annotation when it changed (extraStatusChange), or says
// how long the write must wait for its turn in the progress budget.
func (r *Reconciler) patchExtraStatus(ctx context.Context, d *appsv1.Deployment,
	s rolloutsv1beta1.DeploymentExtraStatus) (time.Duration, error) {
	write, progressOnly := extraStatusChange(d.Annotations[rolloutsv1beta1.DeploymentExtraStatusAnnotation], s)
	if !write {
		return 0, nil
	}
	now := r.Clock.Now()
	if r.extraWritten.Last(d.UID).IsZero() {
		// The release wrote the first extra status when it took the Deployment over, a moment before this
		// controller first saw it: the interval starts there.
		r.extraWritten.Mark(d.UID, now)
	}
	if wait := r.extraWritten.Hold(d.UID, progressOnly, now); wait > 0 {
		return wait, nil
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return 0, fmt.Errorf("encoding the extra status: %w", err)
	}
	// Guarded by the release's control-info: a reconcile that read the Deployment before the release
	// handed it back must not put the annotation back on it.
	err = control.PatchControlledAnnotation(ctx, r.Client, d, rolloutsv1beta1.DeploymentExtraStatusAnnotation, string(raw))
	if apierrors.IsConflict(err) {
		// Released or taken over meanwhile: that change brings its own reconcile.
		ctrl.LoggerFrom(ctx).V(1).Info("Extra status not written: the release's control changed", "deployment", klog.KObj(d))
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("writing the extra status of %s: %w", klog.KObj(d), err)
	}
	r.extraWritten.Mark(d.UID, now)
	return 0, nil
}

// expect remembers a write to a ReplicaSet of d (its creation too when created) until the cache shows it.
func (r *Reconciler) expect(d *appsv1.Deployment, rs *appsv1.ReplicaSet, created bool) {
	key := client.ObjectKeyFromObject(d)
	if created {
		r.expectations.Created(key, rs.Name)
	}
	r.expectations.Updated(key, rs.Name, rs.ResourceVersion)
}
