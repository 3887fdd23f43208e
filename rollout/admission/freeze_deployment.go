package admission

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// deploymentRevisionAnnotation is where the Deployment controller numbers a ReplicaSet's revision.
const deploymentRevisionAnnotation = "deployment.kubernetes.io/revision"

// FreezeDeployment decides what the Deployment webhook does with an update from old to cur, given the
// Rollout that releases the Deployment (nil when none does) and the ReplicaSets of the Deployment's
// namespace that match its selector. It returns the mutated Deployment, nil when nothing changes, or an
// error when the update must be denied.
//
// Entering a release (no in-progressing annotation yet) needs replicas > 0, an effective revision change
// and at least one active ReplicaSet (exactly one when the Rollout routes traffic); the Deployment is then
// paused, labelled with the stable pod-template-hash and annotated in-progressing. During a release the
// Deployment stays frozen the way its rolling style needs.
func FreezeDeployment(old, cur *appsv1.Deployment, rollout *rolloutsv1beta1.Rollout, rss []appsv1.ReplicaSet) (*appsv1.Deployment, error) {
	if old == nil || cur == nil || rollout == nil {
		return nil, nil
	}
	base := cur.DeepCopy()
	backfillUID(base, old)
	out := base.DeepCopy()
	if out.Annotations[rolloutsv1beta1.InProgressingAnnotation] != "" {
		if err := keepDeploymentFrozen(old, out, rollout); err != nil {
			return nil, err
		}
	} else {
		enterDeploymentRelease(old, out, rollout, rss)
	}
	if equality.Semantic.DeepEqual(base, out) {
		return nil, nil
	}
	return out, nil
}

func enterDeploymentRelease(old, d *appsv1.Deployment, rollout *rolloutsv1beta1.Rollout, rss []appsv1.ReplicaSet) {
	if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 {
		return
	}
	if !deploymentRevisionChanged(old, d) {
		return
	}
	owned := activeReplicaSets(d, rss)
	if len(owned) == 0 || (hasTrafficRoutings(rollout) && len(owned) != 1) {
		// With traffic routing the stable Service must select one revision only.
		return
	}
	if hash := stableHash(owned, d); hash != "" {
		setLabel(d, rolloutsv1beta1.DeploymentStableRevisionLabel, hash)
	}
	d.Spec.Paused = true
	markInProgressing(d, rollout)
}

// MissesReplicaSets reports whether rss, read for an update from old to cur that would enter a release,
// holds no active ReplicaSet although the stored Deployment reports pods: a read that lags behind the
// Deployment controller, to be made again from the API server before the new revision goes through unheld.
func MissesReplicaSets(old, cur *appsv1.Deployment, rss []appsv1.ReplicaSet) bool {
	entering := cur.Annotations[rolloutsv1beta1.InProgressingAnnotation] == "" && deploymentRevisionChanged(old, cur)
	return entering && old.Status.Replicas > 0 && len(activeReplicaSets(old, rss)) == 0
}

func deploymentRevisionChanged(old, d *appsv1.Deployment) bool {
	return EffectiveRevisionChange(old.Annotations, d.Annotations, TemplateChanged(&old.Spec.Template, &d.Spec.Template))
}

// activeReplicaSets are the ReplicaSets d controls that are not deleted or scaled to zero.
func activeReplicaSets(d *appsv1.Deployment, rss []appsv1.ReplicaSet) []appsv1.ReplicaSet {
	var out []appsv1.ReplicaSet
	for i := range rss {
		rs := &rss[i]
		owner := metav1.GetControllerOfNoCopy(rs)
		if owner == nil || owner.UID != d.UID || rs.DeletionTimestamp != nil {
			continue
		}
		if rs.Spec.Replicas != nil && *rs.Spec.Replicas == 0 {
			continue
		}
		out = append(out, *rs)
	}
	return out
}

// stableHash is the pod-template-hash of the oldest active ReplicaSet whose template is not the new one.
func stableHash(rss []appsv1.ReplicaSet, d *appsv1.Deployment) string {
	sort.SliceStable(rss, func(i, j int) bool { return olderReplicaSet(&rss[i], &rss[j]) })
	for i := range rss {
		if TemplateChanged(&rss[i].Spec.Template, &d.Spec.Template) {
			return rss[i].Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
	}
	return ""
}

func olderReplicaSet(a, b *appsv1.ReplicaSet) bool {
	ra, errA := strconv.Atoi(a.Annotations[deploymentRevisionAnnotation])
	rb, errB := strconv.Atoi(b.Annotations[deploymentRevisionAnnotation])
	if errA != nil || errB != nil || ra == rb {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return ra < rb
}

// keepDeploymentFrozen handles an update during a release.
func keepDeploymentFrozen(old, d *appsv1.Deployment, rollout *rolloutsv1beta1.Rollout) error {
	if _, err := ParseInProgressing(d.Annotations); err != nil {
		return err
	}
	strategy, err := ParseDeploymentStrategy(d.Annotations)
	if err != nil {
		return err
	}
	switch {
	case strategy != nil && strings.EqualFold(string(strategy.RollingStyle), string(rolloutsv1beta1.PartitionRollingStyle)):
		return keepPartitionFrozen(old, d, *strategy)
	case d.Annotations[rolloutsv1beta1.OriginalDeploymentStrategyAnnotation] != "":
		keepBlueGreenFrozen(old, d)
		return nil
	default:
		return keepCanaryFrozen(old, d, rollout)
	}
}

// keepPartitionFrozen keeps the native controller away (paused, Recreate) while the Advanced Deployment
// controller rolls; rolling update settings edited meanwhile move into the strategy annotation, and a new
// revision pauses the partition.
func keepPartitionFrozen(old, d *appsv1.Deployment, strategy rolloutsv1beta1.DeploymentStrategy) error {
	updated := *strategy.DeepCopy()
	d.Spec.Paused = true
	d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
	if d.Spec.Strategy.RollingUpdate != nil {
		updated.RollingUpdate = d.Spec.Strategy.RollingUpdate
		d.Spec.Strategy.RollingUpdate = nil
	}
	if deploymentRevisionChanged(old, d) {
		updated.Paused = true
	}
	defaultPartitionStrategy(&updated)
	if equality.Semantic.DeepEqual(updated, strategy) {
		return nil
	}
	b, err := json.Marshal(updated)
	if err != nil {
		return fmt.Errorf("encoding annotation %s: %w", rolloutsv1beta1.DeploymentStrategyAnnotation, err)
	}
	d.Annotations[rolloutsv1beta1.DeploymentStrategyAnnotation] = string(b)
	return nil
}

// defaultPartitionStrategy fills the rolling update settings the Advanced Deployment controller needs:
// the native defaults (25% / 25%), and never both zero, which would update nothing.
func defaultPartitionStrategy(s *rolloutsv1beta1.DeploymentStrategy) {
	if s.RollingUpdate == nil {
		s.RollingUpdate = &appsv1.RollingUpdateDeployment{}
	}
	quarter := intstr.FromString("25%")
	if s.RollingUpdate.MaxUnavailable == nil {
		s.RollingUpdate.MaxUnavailable = &quarter
	}
	if s.RollingUpdate.MaxSurge == nil {
		s.RollingUpdate.MaxSurge = &quarter
	}
	surge, _ := intstr.GetScaledValueFromIntOrPercent(s.RollingUpdate.MaxSurge, 100, true)
	unavailable, _ := intstr.GetScaledValueFromIntOrPercent(s.RollingUpdate.MaxUnavailable, 100, true)
	if surge == 0 && unavailable == 0 {
		one := intstr.FromInt32(1)
		s.RollingUpdate.MaxUnavailable = &one
	}
}

// keepBlueGreenFrozen pauses a new revision (a blue-green release cannot take another one; a rollback is
// handled by the controller) and keeps the RollingUpdate strategy the release depends on.
func keepBlueGreenFrozen(old, d *appsv1.Deployment) {
	if deploymentRevisionChanged(old, d) {
		d.Spec.Paused = true
	}
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		d.Spec.Strategy = *old.Spec.Strategy.DeepCopy()
	}
}

// keepCanaryFrozen keeps the stable Deployment paused while the canary Deployment runs, and refuses a switch
// to Recreate, which would replace every stable pod at once when the release ends.
func keepCanaryFrozen(old, d *appsv1.Deployment, rollout *rolloutsv1beta1.Rollout) error {
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType && old.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return fmt.Errorf("spec.strategy.type: Forbidden: may not change to Recreate while Rollout %s releases this Deployment", rollout.Name)
	}
	d.Spec.Paused = true
	return nil
}
