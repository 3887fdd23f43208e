package deployment

import (
	"fmt"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
)

// ReplicaSetState is what the plan reads of one ReplicaSet.
type ReplicaSetState struct {
	Name string
	// Replicas is spec.replicas; Running (status.replicas: its pods not being deleted), Ready and Available
	// are from its status.
	Replicas  int32
	Running   int32
	Ready     int32
	Available int32
	// DesiredReplicas and MaxReplicas are its deployment.kubernetes.io/desired-replicas and
	// max-replicas annotations; nil when absent or not a number.
	DesiredReplicas *int32
	MaxReplicas     *int32
	// Stamped are the batch labels its pod template carries beyond the Deployment's
	// (control.StampedBatchLabels); Settled, that its controller has observed its spec and runs as many pods
	// as spec.replicas, so no pod of its last growth is still to be created.
	Stamped map[string]string
	Settled bool
}

// Input is the Deployment and its ReplicaSets as the plan sees them.
type Input struct {
	// Replicas is the Deployment's spec.replicas.
	Replicas int32
	// Strategy is the deployment-strategy annotation.
	Strategy rolloutsv1beta1.DeploymentStrategy
	// New is the ReplicaSet of the Deployment's template; nil when it does not exist yet.
	New *ReplicaSetState
	// Old are the other ReplicaSets, oldest first.
	Old []ReplicaSetState
	// PodLabels are the labels of the current batch's pods (control.BatchPodLabelsAnnotation), if any.
	PodLabels map[string]string
	// Aborted: the release was aborted (control.ReleaseAbortedAnnotation); the new ReplicaSet shrinks to
	// the partition.
	Aborted bool
}

// Step is one write to a ReplicaSet: its spec.replicas together with its replica annotations.
type Step struct {
	// Name of the ReplicaSet; empty for the new ReplicaSet when it is created.
	Name string
	// New marks the new ReplicaSet, Create that this step creates it.
	New    bool
	Create bool
	// From is spec.replicas before the step and To after it; equal when only the annotations change.
	From int32
	To   int32
	// Relabel marks a write that also sets the batch labels stamped on the pod template to Labels (none
	// when empty).
	Relabel bool
	Labels  map[string]string
}

// Plan is what one reconcile writes.
type Plan struct {
	// Steps are applied in order: scaling up into free room first, then scaling down, then scaling up
	// into room no pod takes any more, then annotation-only writes; a new ReplicaSet that is already
	// active and would grow twice shrinks the old ones first and grows once. Every prefix keeps the surge
	// and availability limits (but see firstPodSurge), and an inactive new ReplicaSet grows before an old
	// one shrinks whenever the room allows, so kube-controller-manager never sees a lone active ReplicaSet
	// below the replicas: its sync of a paused Deployment would scale that one back up. The new
	// ReplicaSet's batch labels change with its writes (see stamp).
	Steps []Step
	// DesiredReplicas and MaxReplicas are the replica annotations every step writes. While the
	// Deployment is paused with strategy Recreate, kube-controller-manager counts no surge, so both are
	// the Deployment's replicas, as it would write them itself.
	DesiredReplicas int32
	MaxReplicas     int32
	// Status is the deployment-extra-status annotation.
	Status rolloutsv1beta1.DeploymentExtraStatus
}

// Compute plans one reconcile of a partition-style Deployment: it moves the new ReplicaSet toward the
// partition and the old ones toward the rest, never above replicas+maxSurge pods nor below
// replicas-maxUnavailable available pods (starting from a state within them).
func Compute(in Input) (Plan, error) {
	lim, err := resolveLimits(in)
	if err != nil {
		return Plan{}, err
	}
	start := newSizes(in)
	grown := start.clone()
	grown.capNew(lim)
	grown.scaleUpNew(lim, firstPodSurge(start, lim))
	shrunk := grown.clone()
	shrunk.scaleDownOld(lim)
	final := shrunk.clone()
	final.scaleUpNew(lim, 0)
	final.scaleUpOld(lim)
	return Plan{
		Steps:           steps(in, lim.replicas, start, grown, shrunk, final),
		DesiredReplicas: lim.replicas,
		MaxReplicas:     lim.replicas,
		Status:          extraStatus(in, lim.target),
	}, nil
}

// firstPodSurge is the one pod the first new pod of a release may surge by when maxSurge is 0. The new
// ReplicaSet is inactive and a lone old one runs every pod: shrinking the old one first would leave it
// the lone active ReplicaSet below the replicas, which kube-controller-manager grows back before the new
// one can start, churning an old pod and surging anyway. Growing the new one first surges by one pod
// until the old one shrinks in the same reconcile.
func firstPodSurge(start sizes, lim limits) int32 {
	if lim.maxTotal > lim.replicas || start.new > 0 || lim.newGoal == 0 {
		return 0
	}
	active := 0
	for _, n := range start.old {
		if n > 0 {
			active++
		}
	}
	if active != 1 {
		return 0
	}
	return 1
}

// limits are the resolved numbers of a plan.
type limits struct {
	replicas     int32 // the Deployment's replicas
	target       int32 // pods the partition puts on the new template
	newGoal      int32 // pods the new ReplicaSet heads for
	maxTotal     int32 // replicas + maxSurge
	minAvailable int32 // replicas - maxUnavailable
}

func resolveLimits(in Input) (limits, error) {
	r := max(in.Replicas, 0)
	surge, unavailable, err := ResolveFenceposts(in.Strategy.RollingUpdate, r)
	if err != nil {
		return limits{}, fmt.Errorf("annotation %s: %w", rolloutsv1beta1.DeploymentStrategyAnnotation, err)
	}
	target, err := control.PartitionedReplicas(in.Strategy.Partition, r)
	if err != nil {
		return limits{}, fmt.Errorf("annotation %s: %w", rolloutsv1beta1.DeploymentStrategyAnnotation, err)
	}
	return limits{
		replicas:     r,
		target:       target,
		newGoal:      newGoal(in, r, target),
		maxTotal:     r + surge,
		minAvailable: r - unavailable,
	}, nil
}

// newGoal is where the new ReplicaSet heads: the partition, but never below the pods it already runs,
// so a lowered partition never moves a release back, unless the release was aborted. When the Deployment was scaled, those pods scale in
// proportion to the new replicas, up or down, as upstream and kube-controller-manager scale every active
// ReplicaSet: 2 new and 3 old pods scaled to 10 become 4 and 6. A paused strategy holds the new ReplicaSet;
// with no old ReplicaSet there is nothing else to run, so it takes every pod.
func newGoal(in Input, replicas, target int32) int32 {
	if len(in.Old) == 0 {
		return replicas
	}
	keep := int32(0)
	if in.New != nil {
		keep = max(in.New.Replicas, 0)
	}
	if previous := scaledFrom(in, replicas); previous > 0 {
		keep = proportion(keep, replicas, previous)
	}
	if in.Strategy.Paused {
		return min(keep, replicas)
	}
	if in.Aborted {
		return min(target, replicas)
	}
	return min(max(target, keep), replicas)
}

// proportion is n scaled from previous replicas to replicas, rounded to the nearest pod as
// kube-controller-manager rounds its proportional scaling.
func proportion(n, replicas, previous int32) int32 {
	return int32(math.Round(float64(n) * float64(replicas) / float64(previous)))
}

// scaledFrom is the replicas the Deployment had before it was scaled, as an active ReplicaSet records
// them (the new one first), or 0 when no active ReplicaSet records other replicas than the Deployment's.
func scaledFrom(in Input, replicas int32) int32 {
	all := make([]ReplicaSetState, 0, len(in.Old)+1)
	if in.New != nil {
		all = append(all, *in.New)
	}
	for _, rs := range append(all, in.Old...) {
		if rs.Replicas > 0 && rs.DesiredReplicas != nil && *rs.DesiredReplicas != replicas {
			return *rs.DesiredReplicas
		}
	}
	return 0
}

func extraStatus(in Input, target int32) rolloutsv1beta1.DeploymentExtraStatus {
	s := rolloutsv1beta1.DeploymentExtraStatus{ExpectedUpdatedReplicas: target}
	if in.New != nil {
		s.UpdatedReadyReplicas = in.New.Ready
	}
	return s
}

// ResolveFenceposts resolves maxSurge (rounded up) and maxUnavailable (rounded down) against replicas,
// with the Deployment defaults of 25% each; when both come to zero maxUnavailable is 1, as in
// kube-controller-manager. Both are capped at replicas (at least 1): more is never usable.
func ResolveFenceposts(ru *appsv1.RollingUpdateDeployment, replicas int32) (surge, unavailable int32, err error) {
	quarter := intstr.FromString("25%")
	maxSurge, maxUnavailable := &quarter, &quarter
	if ru != nil && ru.MaxSurge != nil {
		maxSurge = ru.MaxSurge
	}
	if ru != nil && ru.MaxUnavailable != nil {
		maxUnavailable = ru.MaxUnavailable
	}
	if surge, err = scaledValue(maxSurge, replicas, true); err != nil {
		return 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	if unavailable, err = scaledValue(maxUnavailable, replicas, false); err != nil {
		return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable, nil
}

func scaledValue(v *intstr.IntOrString, replicas int32, roundUp bool) (int32, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(replicas), roundUp)
	if err != nil {
		return 0, err
	}
	return int32(min(max(n, 0), int(max(replicas, 1)))), nil //nolint:gosec // clamped to [0, replicas]
}
