package control

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
	"github.com/flotilla-dev/flotilla/workloads/jsonpatch"
)

// deploymentPartition releases a native Deployment batch by batch without an extra workload: the
// Deployment is paused with strategy Recreate so kube-controller-manager does not roll it, and the
// Advanced Deployment controller scales its ReplicaSets to the partition in the deployment-strategy
// annotation.
type deploymentPartition struct {
	client client.Client
	target Target
}

// NewDeploymentPartition is the Factory of the partition-style control of apps/v1 Deployments.
func NewDeploymentPartition(c client.Client, t Target) WorkloadControl {
	return &deploymentPartition{client: c, target: t}
}

// Read returns the Deployment's release state, counted on its ReplicaSets.
func (p *deploymentPartition) Read(ctx context.Context) (*WorkloadInfo, error) {
	d, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	// Every reconcile of the release reads its state; the info keeps nothing of the ReplicaSets, so they are
	// read without a copy.
	sets, err := OwnedReplicaSets(ctx, p.client, d, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, err
	}
	return partitionDeploymentInfo(d, sets, p.target.Owner)
}

// Initialize hands the Deployment to the Advanced Deployment controller, in one patch.
func (p *deploymentPartition) Initialize(ctx context.Context) error {
	d, err := p.get(ctx)
	if err != nil {
		return err
	}
	want, err := partitionInitialized(d, p.target.Owner)
	if err != nil {
		return err
	}
	return p.takeOver(ctx, d, want)
}

// InitializeBatch hands the Deployment to the Advanced Deployment controller with batch's partition already
// in place, in one patch.
func (p *deploymentPartition) InitializeBatch(ctx context.Context, batch Batch) error {
	d, err := p.get(ctx)
	if err != nil {
		return err
	}
	want, err := partitionInitializedFor(d, p.target.Owner, batch)
	if err != nil {
		return err
	}
	return p.takeOver(ctx, d, want)
}

// takeOver sends Initialize's change as a JSON patch that first tests what the change is computed from, as
// read: the annotations (control-info, strategy, extra status), spec.strategy and spec.replicas. Like a
// resourceVersion guard it never overwrites a change it did not read; unlike one, it does not lose to
// kube-controller-manager's status write, which a release's start often meets. A Deployment without
// annotations, or a change beyond the fields a release sets, is patched under its resourceVersion.
func (p *deploymentPartition) takeOver(ctx context.Context, d, want *appsv1.Deployment) error {
	ops, ok := releaseOps(d, want)
	if !ok || d.Annotations == nil {
		return p.patch(ctx, d, want)
	}
	if len(ops) == 0 {
		return nil
	}
	tests := []jsonpatch.Op{
		jsonpatch.Test("/metadata/annotations", d.Annotations),
		jsonpatch.Test("/spec/strategy", d.Spec.Strategy),
		jsonpatch.Test("/spec/replicas", d.Spec.Replicas),
	}
	if err := patchJSON(ctx, p.client, appsv1.Resource("deployments"), d, append(tests, ops...)); err != nil {
		return fmt.Errorf("patching deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}

// UpgradeBatch raises the partition of the deployment-strategy annotation to the batch's desired updated
// pods and records the batch's pod labels for the Advanced Deployment controller, in one patch.
func (p *deploymentPartition) UpgradeBatch(ctx context.Context, batch Batch) error {
	d, err := p.get(ctx)
	if err != nil {
		return err
	}
	if !ControlledBy(d.Annotations, p.target.Owner) {
		return fmt.Errorf("deployment %s/%s is not under this release's control (annotation %s)",
			d.Namespace, d.Name, rolloutsv1beta1.BatchReleaseControlAnnotation)
	}
	changes, err := partitionUpgraded(d, batch)
	if err != nil || len(changes) == 0 {
		return err
	}
	// The strategy is tested as read, so a partition written meanwhile is never lowered.
	return PatchControlledAnnotations(ctx, p.client, d, changes, rolloutsv1beta1.DeploymentStrategyAnnotation)
}

// PatchControlledAnnotation sets one annotation of a Deployment under a release's control; see
// PatchControlledAnnotations.
func PatchControlledAnnotation(ctx context.Context, c client.Client, d *appsv1.Deployment, key, value string, guards ...string) error {
	return PatchControlledAnnotations(ctx, c, d, map[string]string{key: value}, guards...)
}

// PatchControlledAnnotations sets annotations (an empty value removes one) of a Deployment under a release's control by a JSON patch that
// first tests its control-info, and each annotation named in guards, against the values d carries. Unlike a
// resourceVersion guard it does not lose to kube-controller-manager's status writes, which come with every
// pod of a batch. A failed test (the release lost control, or a guarded annotation changed since the read)
// returns a conflict, so the caller plans again from a fresh read.
func PatchControlledAnnotations(ctx context.Context, c client.Client, d *appsv1.Deployment, values map[string]string, guards ...string) error {
	ops := make([]jsonpatch.Op, 0, len(guards)+len(values)+1)
	for _, k := range append([]string{rolloutsv1beta1.BatchReleaseControlAnnotation}, guards...) {
		ops = append(ops, jsonpatch.Test(AnnotationPath(k), d.Annotations[k]))
	}
	ops = append(ops, metaOps(annotationsPath, d.Annotations, withValues(d.Annotations, values))...)
	if err := patchJSON(ctx, c, appsv1.Resource("deployments"), d, ops); err != nil {
		return fmt.Errorf("patching deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}

// annotationsPath is the JSON pointer prefix of a key of an object's annotations.
const annotationsPath = "/metadata/annotations/"

// AnnotationPath is the JSON pointer (RFC 6901) of an annotation, for JSON patches: "~" and "/" in the key
// are escaped.
func AnnotationPath(key string) string {
	return annotationsPath + jsonpatch.Escape(key)
}

// withValues is a copy of m with values set in it, an empty value removing its key.
func withValues(m, values map[string]string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range values {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// Finalize gives the Deployment back to kube-controller-manager.
func (p *deploymentPartition) Finalize(ctx context.Context) (bool, error) {
	d, err := p.get(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
	key := client.ObjectKeyFromObject(d)
	if expectations.Wait(partitionReleases, key, []*appsv1.Deployment{d}) > 0 {
		// Read before this release's own finalizing write: planned from it, that write would go again and fail
		// its test. The write's event wakes the release once the cache has it.
		return false, nil
	}
	sets, err := p.replicaSets(ctx, d)
	if err != nil {
		return false, err
	}
	if partitionReleasedBy(d, p.target.Owner) {
		if err := p.unstamp(ctx, d, sets, p.target.Plan.BatchPartition == nil); err != nil {
			return false, err
		}
	}
	want := partitionFinalized(d, p.target)
	written, err := p.release(ctx, d, want)
	if err != nil {
		return false, err
	}
	if written != "" {
		partitionReleases.Updated(key, d.Name, written)
	}
	return partitionFinalizeDone(want, p.target) || partitionRolledOut(d, sets), nil
}

// partitionReleases remembers each Deployment's finalizing write until the cache shows it. Shared by every
// partition control of the process: controls are built per reconcile, the memory of a write must outlive them.
var partitionReleases = expectations.New(clock.RealClock{}, time.Minute)

// release sends Finalize's change as a JSON patch that first tests the release's control-info as read. Like a
// resourceVersion guard, it never undoes a newer release's Initialize (whose control-info names another
// BatchRelease); unlike one, it does not lose to a write that touched nothing of the release, such as the
// Rollout taking its in-progressing mark off in the same moment. A Deployment without control-info, or a
// change beyond the fields a release sets, is patched under its resourceVersion.
// It returns the resourceVersion the write made, "" when nothing had to be written.
func (p *deploymentPartition) release(ctx context.Context, d, want *appsv1.Deployment) (string, error) {
	info, controlled := d.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]
	ops, ok := releaseOps(d, want)
	if !controlled || !ok || len(ops) == 0 {
		// want takes the response: a resourceVersion of its own when something was written.
		if err := p.patch(ctx, d, want); err != nil || want.ResourceVersion == d.ResourceVersion {
			return "", err
		}
		return want.ResourceVersion, nil
	}
	test := jsonpatch.Test(AnnotationPath(rolloutsv1beta1.BatchReleaseControlAnnotation), info)
	written := d.DeepCopy()
	if err := jsonpatch.Apply(ctx, p.client, appsv1.Resource("deployments"), written, append([]jsonpatch.Op{test}, ops...)); err != nil {
		return "", fmt.Errorf("patching deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return written.ResourceVersion, nil
}

// releaseOps are the JSON patch operations that turn d into want, which differs from d at most in the fields
// a release sets (annotations, labels, spec.paused and spec.strategy); ok is false when it differs elsewhere.
func releaseOps(d, want *appsv1.Deployment) (ops []jsonpatch.Op, ok bool) {
	covered := d.DeepCopy()
	covered.Annotations, covered.Labels = want.Annotations, want.Labels
	covered.Spec.Paused, covered.Spec.Strategy = want.Spec.Paused, want.Spec.Strategy
	if !equality.Semantic.DeepEqual(covered, want) || (d.Labels == nil && len(want.Labels) > 0) {
		// A label added to a Deployment without labels needs the map itself added: a release adds none.
		return nil, false
	}
	ops = append(metaOps(annotationsPath, d.Annotations, want.Annotations), metaOps("/metadata/labels/", d.Labels, want.Labels)...)
	if d.Spec.Paused != want.Spec.Paused {
		ops = append(ops, jsonpatch.Add("/spec/paused", want.Spec.Paused))
	}
	if !equality.Semantic.DeepEqual(d.Spec.Strategy, want.Spec.Strategy) {
		ops = append(ops, jsonpatch.Add("/spec/strategy", want.Spec.Strategy))
	}
	return ops, true
}

// metaOps turn the map from into to, each key under prefix (a JSON pointer ending in "/"): removed, or set.
func metaOps(prefix string, from, to map[string]string) []jsonpatch.Op {
	var ops []jsonpatch.Op
	for _, k := range slices.Sorted(maps.Keys(from)) {
		if _, kept := to[k]; !kept {
			ops = append(ops, jsonpatch.Remove(prefix+jsonpatch.Escape(k)))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(to)) {
		if v, had := from[k]; !had || v != to[k] {
			ops = append(ops, jsonpatch.Add(prefix+jsonpatch.Escape(k), to[k]))
		}
	}
	return ops
}

// unstamp makes sure kube-controller-manager sees no batch labels on d's ReplicaSets when d resumes: it takes
// a stamped template for another Deployment revision, and would bump d's collision count and roll every pod to
// a ReplicaSet of its own. So stamped labels are removed first (when resuming, the release's pod labels with
// them, so the Advanced Deployment controller stamps no more). When resuming, d resumes only once the controller
// of every ReplicaSet of d's template, which shares kube-controller-manager's cache, has observed its latest spec
// (ErrNotObserved until then); a release that leaves d paused removes the stamps all the same, for whoever
// resumes it later.
func (p *deploymentPartition) unstamp(ctx context.Context, d *appsv1.Deployment, sets []appsv1.ReplicaSet, resuming bool) error {
	observed := !unobservedTemplate(d, sets)
	for i := range sets {
		rs := &sets[i]
		stamped := StampedBatchLabels(&rs.Spec.Template, &d.Spec.Template)
		if stamped == nil {
			continue
		}
		observed = false
		// Left paused, the release's own patch drops its pod labels with control-info, after which no
		// Advanced Deployment controller stamps d; a write to d here would only make that patch conflict.
		if err := p.dropPodLabelsIf(ctx, d, resuming); err != nil {
			return err
		}
		if err := patchJSON(ctx, p.client, appsv1.Resource("replicasets"), rs, StampOps(stamped, nil)); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("removing the batch labels of replica set %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	if resuming && !observed {
		return fmt.Errorf("deployment %s/%s: waiting for the ReplicaSet controller to observe its replica sets without batch labels: %w", d.Namespace, d.Name, ErrNotObserved)
	}
	return nil
}

// unobservedTemplate: a ReplicaSet of d's template (up to the hash and batch labels) has a spec its controller
// has not observed. kube-controller-manager finds a Deployment's new ReplicaSet by its template, so one it still
// sees stamped would make it create another; a ReplicaSet of an older template it sees a scale behind costs it
// no more than a conflict, so the scale-down of the last batch does not hold the Deployment.
func unobservedTemplate(d *appsv1.Deployment, sets []appsv1.ReplicaSet) bool {
	for i := range sets {
		rs := &sets[i]
		if rs.Status.ObservedGeneration < rs.Generation && isNewReplicaSet(rs, d) {
			return true
		}
	}
	return false
}

// dropPodLabelsIf removes the BatchPodLabelsAnnotation of d, if asked and present, while a release controls d.
func (p *deploymentPartition) dropPodLabelsIf(ctx context.Context, d *appsv1.Deployment, asked bool) error {
	_, labels := d.Annotations[BatchPodLabelsAnnotation]
	if _, controlled := d.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]; !asked || !labels || !controlled {
		// Without control-info no Advanced Deployment controller reads them, and the release's patch drops them.
		return nil
	}
	ops := []jsonpatch.Op{
		jsonpatch.Test(AnnotationPath(rolloutsv1beta1.BatchReleaseControlAnnotation), d.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]),
		jsonpatch.Remove(AnnotationPath(BatchPodLabelsAnnotation)),
	}
	if err := patchJSON(ctx, p.client, appsv1.Resource("deployments"), d, ops); err != nil {
		return fmt.Errorf("patching deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	delete(d.Annotations, BatchPodLabelsAnnotation)
	return nil
}

// patchJSON sends a JSON patch to a copy of obj, of resource gr; a failed test reads as a conflict.
func patchJSON(ctx context.Context, c client.Client, gr schema.GroupResource, obj client.Object, ops []jsonpatch.Op) error {
	return jsonpatch.Apply(ctx, c, gr, obj.DeepCopyObject().(client.Object), ops)
}

// partitionRolledOut reports whether d's ReplicaSets already show the resumed Deployment rolled out: its new
// ReplicaSet runs every pod, all available, and the old ones none. After a release that reached 100% this is
// so the moment the Deployment resumes, and kube-controller-manager's status sync only says so later.
func partitionRolledOut(d *appsv1.Deployment, sets []appsv1.ReplicaSet) bool {
	newRS, old := SplitReplicaSets(d, sets)
	replicas := partitionReplicasOf(d)
	if newRS == nil || newRS.Status.ObservedGeneration < newRS.Generation || ptr.Deref(newRS.Spec.Replicas, 0) != replicas ||
		newRS.Status.Replicas != replicas || newRS.Status.AvailableReplicas != replicas {
		return false
	}
	for _, rs := range old {
		if ptr.Deref(rs.Spec.Replicas, 0) != 0 || rs.Status.Replicas != 0 {
			return false
		}
	}
	return true
}

func (p *deploymentPartition) get(ctx context.Context) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: p.target.Namespace, Name: p.target.Ref.Name}
	if err := p.client.Get(ctx, key, d); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deployment %s: %w: %w", key, ErrWorkloadGone, err)
		}
		return nil, fmt.Errorf("getting deployment %s: %w", key, err)
	}
	return d, nil
}

// replicaSets lists the ReplicaSets the Deployment controls.
func (p *deploymentPartition) replicaSets(ctx context.Context, d *appsv1.Deployment) ([]appsv1.ReplicaSet, error) {
	return OwnedReplicaSets(ctx, p.client, d)
}

// patch sends the difference between d and want, if any, guarded by d's resourceVersion so that it never
// overwrites a change it did not read. Even Finalize, which only sets fields and drops keys, would otherwise
// undo a newer BatchRelease's Initialize when it acts on a stale read (the BatchRelease of a restarted release
// has the same name as the one it replaces).
func (p *deploymentPartition) patch(ctx context.Context, d, want *appsv1.Deployment) error {
	if equality.Semantic.DeepEqual(d, want) {
		return nil
	}
	base := client.MergeFromWithOptions(d, client.MergeFromWithOptimisticLock{})
	if err := p.client.Patch(ctx, want, base); err != nil {
		return fmt.Errorf("patching deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}

// partitionInitialized is d frozen for a partition-style release owned by owner. A partition already
// written for the same owner is kept, so that calling Initialize again never moves a release back.
func partitionInitialized(d *appsv1.Deployment, owner metav1.OwnerReference) (*appsv1.Deployment, error) {
	s, ok, err := DeploymentStrategyFrom(d.Annotations)
	if err != nil {
		return nil, err
	}
	if !ok || !ControlledBy(d.Annotations, owner) {
		s.Partition = intstr.FromInt32(0)
	}
	if s.RollingUpdate == nil && d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		s.RollingUpdate = d.Spec.Strategy.RollingUpdate.DeepCopy()
	}
	s.RollingStyle, s.Paused = rolloutsv1beta1.PartitionRollingStyle, false
	want := d.DeepCopy()
	partitionSetMeta(&want.Labels, rolloutsv1beta1.AdvancedDeploymentControlLabel, "true")
	partitionSetMeta(&want.Annotations, rolloutsv1beta1.DeploymentStrategyAnnotation, partitionStrategyJSON(s))
	partitionSetMeta(&want.Annotations, rolloutsv1beta1.BatchReleaseControlAnnotation, ControlInfo(owner))
	want.Spec.Paused = true
	want.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return want, nil
}

// partitionInitializedFor is partitionInitialized with batch's annotations already written.
func partitionInitializedFor(d *appsv1.Deployment, owner metav1.OwnerReference, batch Batch) (*appsv1.Deployment, error) {
	want, err := partitionInitialized(d, owner)
	if err != nil {
		return nil, err
	}
	changes, err := partitionUpgraded(want, batch)
	if err != nil {
		return nil, err
	}
	want.Annotations = withValues(want.Annotations, changes)
	return want, firstExtraStatus(want)
}

// firstExtraStatus gives a Deployment taken over without an extra status the one the Advanced Deployment
// controller would write first (the pods its partition puts on the new template, none of them ready yet), so
// that the write taking it over carries it: one write fewer per release. The controller rewrites it if its
// own count differs.
func firstExtraStatus(d *appsv1.Deployment) error {
	if _, ok := d.Annotations[rolloutsv1beta1.DeploymentExtraStatusAnnotation]; ok {
		return nil
	}
	s, _, err := DeploymentStrategyFrom(d.Annotations)
	if err != nil {
		return err
	}
	target, err := PartitionedReplicas(s.Partition, partitionReplicasOf(d))
	if err != nil || target == 0 {
		return err
	}
	raw, err := json.Marshal(rolloutsv1beta1.DeploymentExtraStatus{ExpectedUpdatedReplicas: target})
	if err != nil {
		return err
	}
	partitionSetMeta(&d.Annotations, rolloutsv1beta1.DeploymentExtraStatusAnnotation, string(raw))
	return nil
}

// partitionUpgraded are the annotations to change for batch: the partition raised to its desired updated pods
// (a partition already at or above it is left alone) and its pod labels, when they changed.
func partitionUpgraded(d *appsv1.Deployment, batch Batch) (map[string]string, error) {
	s, ok, err := DeploymentStrategyFrom(d.Annotations)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("deployment %s/%s has no annotation %s: not initialized",
			d.Namespace, d.Name, rolloutsv1beta1.DeploymentStrategyAnnotation)
	}
	current, err := PartitionedReplicas(s.Partition, partitionReplicasOf(d))
	if err != nil {
		return nil, fmt.Errorf("annotation %s: %w", rolloutsv1beta1.DeploymentStrategyAnnotation, err)
	}
	changes := map[string]string{}
	if want, raise := raisedPartition(s.Partition, current, batch, partitionReplicasOf(d)); raise {
		s.Partition = want
		changes[rolloutsv1beta1.DeploymentStrategyAnnotation] = partitionStrategyJSON(s)
	}
	abortedPartition(d, &s, current, batch, changes)
	if len(batch.PodLabels) > 0 && !maps.Equal(BatchPodLabelsFrom(d.Annotations), batch.PodLabels) {
		changes[BatchPodLabelsAnnotation] = EncodeBatchPodLabels(batch.PodLabels)
	}
	return changes, nil
}

// raisedPartition is the partition that lets batch's pods be updated, and whether it is higher than current
// (what the partition in place resolves to). A batch given as a percentage is written as that percentage,
// so the Advanced Deployment controller keeps the share when the Deployment scales mid-release; a partition
// never goes down.
func raisedPartition(partition intstr.IntOrString, current int32, batch Batch, replicas int32) (intstr.IntOrString, bool) {
	desired := batch.DesiredUpdated
	if current >= desired || (partition.Type == intstr.Int && partition.IntVal >= desired) {
		return partition, false
	}
	if batch.Share != nil {
		if n, err := PartitionedReplicas(*batch.Share, replicas); err == nil && n == desired {
			return *batch.Share, true
		}
	}
	return intstr.FromInt32(desired), true
}

// abortedPartition lowers the partition of an aborted release to the batch and marks the Deployment so, or
// drops the mark once the release goes on.
func abortedPartition(d *appsv1.Deployment, s *rolloutsv1beta1.DeploymentStrategy, current int32, batch Batch, changes map[string]string) {
	marked := d.Annotations[ReleaseAbortedAnnotation] == "true"
	switch {
	case batch.Abort && (current != batch.DesiredUpdated || !marked):
		s.Partition = intstr.FromInt32(batch.DesiredUpdated)
		changes[rolloutsv1beta1.DeploymentStrategyAnnotation] = partitionStrategyJSON(*s)
		changes[ReleaseAbortedAnnotation] = "true"
	case !batch.Abort && marked:
		changes[ReleaseAbortedAnnotation] = ""
	}
}

// partitionFinalized is d released by the control: resumed with its saved rolling update restored and every
// release marker removed. A release that still names a batch (a restart for a newer version, a deletion that
// keeps the workload paused) only gives up control-info: the Deployment stays paused with strategy Recreate,
// its saved strategy and stable revision, so that kube-controller-manager never rolls it before the next
// release takes it over. A Deployment another release controls, or that carries no marker of a release, is
// left alone.
func partitionFinalized(d *appsv1.Deployment, t Target) *appsv1.Deployment {
	if !partitionReleasedBy(d, t.Owner) {
		return d
	}
	want := d.DeepCopy()
	delete(want.Annotations, rolloutsv1beta1.BatchReleaseControlAnnotation)
	delete(want.Annotations, BatchPodLabelsAnnotation)
	if t.Plan.BatchPartition != nil {
		return want
	}
	// A malformed saved strategy must not keep the Deployment frozen for ever: it is released with the
	// Deployment defaults instead.
	s, ok, err := DeploymentStrategyFrom(d.Annotations)
	if err != nil {
		s, ok = rolloutsv1beta1.DeploymentStrategy{}, true
	}
	want.Spec.Paused = false
	if ok {
		want.Spec.Strategy = appsv1.DeploymentStrategy{
			Type:          appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: s.RollingUpdate.DeepCopy(),
		}
	}
	delete(want.Annotations, rolloutsv1beta1.DeploymentStrategyAnnotation)
	delete(want.Annotations, rolloutsv1beta1.DeploymentExtraStatusAnnotation)
	delete(want.Labels, rolloutsv1beta1.DeploymentStableRevisionLabel)
	delete(want.Labels, rolloutsv1beta1.AdvancedDeploymentControlLabel)
	return want
}

// partitionReleasedBy reports whether d still carries a marker of a partition-style release that is not
// another BatchRelease's. The stable-revision label counts: the workload webhook sets it when it pauses a new
// revision, before any BatchRelease takes control.
func partitionReleasedBy(d *appsv1.Deployment, owner metav1.OwnerReference) bool {
	if d.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation] != "" && !ControlledBy(d.Annotations, owner) {
		return false
	}
	_, strategy := d.Annotations[rolloutsv1beta1.DeploymentStrategyAnnotation]
	_, info := d.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]
	_, label := d.Labels[rolloutsv1beta1.AdvancedDeploymentControlLabel]
	_, stable := d.Labels[rolloutsv1beta1.DeploymentStableRevisionLabel]
	return strategy || info || label || stable
}

// partitionFinalizeDone tells whether Finalize may report done for the Deployment as patched: at once, unless
// the plan waits for the resumed Deployment to run every pod updated and available.
func partitionFinalizeDone(d *appsv1.Deployment, t Target) bool {
	if t.Plan.FinalizingPolicy != rolloutsv1beta1.WaitResumeFinalizingPolicyType || d.Spec.Paused {
		return true
	}
	replicas := partitionReplicasOf(d)
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == replicas &&
		s.Replicas == replicas && s.AvailableReplicas == replicas
}

func partitionSetMeta(m *map[string]string, key, value string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[key] = value
}
