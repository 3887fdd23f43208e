package plan

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// BatchAction is the one workload change a BatchRelease reconcile makes.
type BatchAction string

// Batch actions.
const (
	ActionNone       BatchAction = ""
	ActionInitialize BatchAction = "Initialize"
	// ActionInitializeBatch is Initialize and the first batch's UpgradeBatch in one write (BatchOnInitialize).
	ActionInitializeBatch BatchAction = "InitializeBatch"
	ActionUpgrade         BatchAction = "UpgradeBatch"
	ActionFinalize        BatchAction = "Finalize"
)

// VerifyInterval is how often a batch whose pods are not ready yet is looked at again; pod and workload
// events wake the controller earlier.
const VerifyInterval = 5 * time.Second

// WorkloadView is the part of a workload's state the BatchRelease planner reads.
type WorkloadView struct {
	Replicas       int32
	Updated        int32
	UpdatedReady   int32
	Labelled       int32
	StableRevision string
	UpdateRevision string
	Consistent     bool
}

// BatchWorld is what the BatchRelease controller observed.
type BatchWorld struct {
	Now        time.Time
	Generation int64
	Plan       rolloutsv1beta1.ReleasePlan
	Deleting   bool
	// RollbackInBatch: the BatchRelease carries rollouts.kruise.io/rollback-in-batch "true". Pods already on
	// the update revision when it starts are then left out of the batches (noNeedUpdateReplicas).
	RollbackInBatch bool
	// BatchOnInitialize: the workload's control can start a batch in the write that takes control of it.
	BatchOnInitialize bool
	// Workload is nil when the workload is gone.
	Workload *WorkloadView
}

// BatchDecision is the status to write once Action (if any) has been applied, and the action's argument.
type BatchDecision struct {
	Status         rolloutsv1beta1.BatchReleaseStatus
	Action         BatchAction
	DesiredUpdated int32
	// Share is the batch's canaryReplicas when it is a percentage of the whole workload: a control that can
	// hold a percentage (the Advanced Deployment's partition) keeps the batch's share when the workload scales.
	Share *intstr.IntOrString
	// Unmoved is the number of noNeed pods of a rollback in batches, included in DesiredUpdated.
	Unmoved      int32
	RequeueAfter time.Duration
	Event        string
	// BatchReady is true when the current batch became ready with this decision.
	BatchReady bool
	// ReadyWanted, when not 0, is the number of updated pods that must be ready before the current batch
	// may be (ReadyWanted): until then, only a change other than a pod becoming ready can change the decision.
	ReadyWanted int32
}

// PlanBatchRelease decides a BatchRelease's next move.
func PlanBatchRelease(st rolloutsv1beta1.BatchReleaseStatus, w BatchWorld) BatchDecision {
	d := BatchDecision{Status: *st.DeepCopy()}
	d.Status.ObservedGeneration = w.Generation
	switch {
	case st.Phase == rolloutsv1beta1.RolloutPhaseCompleted:
		return d
	case w.Workload == nil:
		d.Status.Phase = rolloutsv1beta1.RolloutPhaseCompleted
		d.Status.Message = "workload has gone"
		return d
	case w.Deleting || w.Plan.BatchPartition == nil:
		return finalizeBatches(d, w)
	case st.Phase == "" || st.Phase == rolloutsv1beta1.RolloutPhasePreparing:
		return initializeBatches(d, w)
	case revertedUnder(st, w):
		return holdReverted(d, w)
	}
	observe(&d.Status, w)
	recalculate(&d, st, w)
	return progressBatch(d, w)
}

// MsgReverted is the BatchRelease's message while it holds a workload put back to the stable revision.
const MsgReverted = "workload reverted to the stable revision: holding until the release is finalized or replaced"

// revertedUnder: the workload went back to this release's stable revision. The release of the new revision
// is not this one's to make: the Rollout finalizes it (a rollback at once) or replaces it (a rollback in
// batches, which must find the pods the release being rolled back updated still on it).
func revertedUnder(st rolloutsv1beta1.BatchReleaseStatus, w BatchWorld) bool {
	return !w.RollbackInBatch && st.StableRevision != "" && st.UpdateRevision != st.StableRevision &&
		w.Workload.UpdateRevision == st.StableRevision
}

// holdReverted moves no pod: a batch of the stable revision would roll back pods a rollback in batches
// leaves to its own first step.
func holdReverted(d BatchDecision, w BatchWorld) BatchDecision {
	observe(&d.Status, w)
	d.Status.Message = MsgReverted
	return d
}

func finalizeBatches(d BatchDecision, w BatchWorld) BatchDecision {
	if d.Status.Phase != rolloutsv1beta1.RolloutPhaseFinalizing {
		d.Event = "finalizing: releasing the workload"
	}
	d.Status.Phase = rolloutsv1beta1.RolloutPhaseFinalizing
	d.Status.Message = "BatchRelease is finalizing"
	d.Status.ObservedReleasePlanHash = ReleasePlanHash(w.Plan)
	d.Action = ActionFinalize
	return d
}

// Completed is the status after Finalize reported done.
func Completed(st rolloutsv1beta1.BatchReleaseStatus) rolloutsv1beta1.BatchReleaseStatus {
	out := *st.DeepCopy()
	out.Phase = rolloutsv1beta1.RolloutPhaseCompleted
	out.Message = "BatchRelease is completed"
	return out
}

func initializeBatches(d BatchDecision, w BatchWorld) BatchDecision {
	d.Status.Phase = rolloutsv1beta1.RolloutPhaseProgressing
	d.Status.Message = "BatchRelease is progressing"
	d.Status.CanaryStatus = rolloutsv1beta1.BatchReleaseCanaryStatus{
		CurrentBatch:      startBatch(w.Plan),
		CurrentBatchState: rolloutsv1beta1.UpgradingBatchState,
	}
	observe(&d.Status, w)
	d.Status.StableRevision = w.Workload.StableRevision
	d.Status.UpdateRevision = w.Workload.UpdateRevision
	d.Status.ObservedWorkloadReplicas = w.Workload.Replicas
	d.Status.ObservedRolloutID = w.Plan.RolloutID
	d.Status.ObservedReleasePlanHash = ReleasePlanHash(w.Plan)
	if w.RollbackInBatch {
		// Before any batch: the pods on the update revision now are those the rolled-back release never
		// reached (a fresh release has none).
		d.Status.CanaryStatus.NoNeedUpdateReplicas = &w.Workload.Updated
	}
	d.Action = ActionInitialize
	d.Event = "initialized: the workload is under release control"
	if w.BatchOnInitialize {
		d = upgrade(d, w)
		d.Action = ActionInitializeBatch
	}
	return d
}

// startBatch: a plan may start beyond its first batch (a step jump or a restarted controller).
func startBatch(p rolloutsv1beta1.ReleasePlan) int32 {
	if p.BatchPartition == nil || len(p.Batches) == 0 {
		return 0
	}
	return min(max(*p.BatchPartition, 0), int32(len(p.Batches)-1)) //nolint:gosec // <= 50 batches
}

func observe(st *rolloutsv1beta1.BatchReleaseStatus, w BatchWorld) {
	st.CanaryStatus.UpdatedReplicas = w.Workload.Updated
	st.CanaryStatus.UpdatedReadyReplicas = w.Workload.UpdatedReady
}

// recalculate restarts the current batch when the plan, the workload's revision or its size changed under
// the release.
func recalculate(d *BatchDecision, old rolloutsv1beta1.BatchReleaseStatus, w BatchWorld) {
	st := &d.Status
	hash := ReleasePlanHash(w.Plan)
	if hash != old.ObservedReleasePlanHash && partitionMoved(old, w.Plan) {
		// The Rollout lets the batches run on (or stops them at the current one): the batch in flight goes on.
		st.ObservedReleasePlanHash = hash
	}
	switch {
	case hash != st.ObservedReleasePlanHash:
		if w.Plan.RolloutID != old.ObservedRolloutID {
			st.CanaryStatus.CurrentBatch = 0
		} else {
			st.CanaryStatus.CurrentBatch = startBatch(w.Plan)
		}
		st.ObservedReleasePlanHash, st.ObservedRolloutID = hash, w.Plan.RolloutID
		restartBatch(st)
	case w.Workload.UpdateRevision != old.UpdateRevision:
		st.UpdateRevision = w.Workload.UpdateRevision
		st.CanaryStatus.CurrentBatch = 0
		restartBatch(st)
	case w.Workload.Replicas != old.ObservedWorkloadReplicas:
		st.ObservedWorkloadReplicas = w.Workload.Replicas
		restartBatch(st)
	}
}

// partitionMoved: the plan is the one observed but for a partition that moved between the current batch and
// the next one: the Rollout's next step, or its pacing (paceBatches) given or taken back. A step jump moves it
// further and restarts the batch at the new partition.
func partitionMoved(old rolloutsv1beta1.BatchReleaseStatus, p rolloutsv1beta1.ReleasePlan) bool {
	current := old.CanaryStatus.CurrentBatch
	if p.BatchPartition == nil || (*p.BatchPartition != current && *p.BatchPartition != current+1) {
		return false
	}
	for _, was := range []int32{current, current + 1} {
		if hashAtPartition(p, &was) == old.ObservedReleasePlanHash {
			return true
		}
	}
	return false
}

func restartBatch(st *rolloutsv1beta1.BatchReleaseStatus) {
	st.CanaryStatus.CurrentBatchState = rolloutsv1beta1.UpgradingBatchState
	st.CanaryStatus.BatchReadyTime = nil
}

func progressBatch(d BatchDecision, w BatchWorld) BatchDecision {
	cs := &d.Status.CanaryStatus
	switch cs.CurrentBatchState {
	case rolloutsv1beta1.ReadyBatchState:
		if !mayProceed(cs.CurrentBatch, w.Plan) {
			return d
		}
		cs.CurrentBatch++
		return upgrade(d, w)
	case rolloutsv1beta1.VerifyingBatchState:
		return verify(d, w)
	default:
		return upgrade(d, w)
	}
}

func upgrade(d BatchDecision, w BatchWorld) BatchDecision {
	d.Status.CanaryStatus.CurrentBatchState = rolloutsv1beta1.VerifyingBatchState
	d.Status.CanaryStatus.BatchReadyTime = nil
	d.Action = ActionUpgrade
	d.DesiredUpdated = RollbackTarget(w.Plan, d.Status.CanaryStatus.CurrentBatch, w.Workload.Replicas, d.Status.CanaryStatus.NoNeedUpdateReplicas)
	d.Share = batchShare(w.Plan, d.Status.CanaryStatus)
	if n := d.Status.CanaryStatus.NoNeedUpdateReplicas; n != nil {
		d.Unmoved = min(max(*n, 0), w.Workload.Replicas)
	}
	d.RequeueAfter = VerifyInterval
	return d
}

// batchShare is the current batch's canaryReplicas when it is a percentage of the whole workload (not of the
// pods a rollback in batches moves back), else nil.
func batchShare(p rolloutsv1beta1.ReleasePlan, cs rolloutsv1beta1.BatchReleaseCanaryStatus) *intstr.IntOrString {
	if cs.NoNeedUpdateReplicas != nil || int(cs.CurrentBatch) >= len(p.Batches) || cs.CurrentBatch < 0 {
		return nil
	}
	if r := p.Batches[cs.CurrentBatch].CanaryReplicas; r.Type == intstr.String {
		return &r
	}
	return nil
}

func verify(d BatchDecision, w BatchWorld) BatchDecision {
	cs := &d.Status.CanaryStatus
	desired := RollbackTarget(w.Plan, cs.CurrentBatch, w.Workload.Replicas, cs.NoNeedUpdateReplicas)
	in := ReadyInput{
		Desired: desired, Updated: w.Workload.Updated, UpdatedReady: w.Workload.UpdatedReady,
		FailureThreshold: w.Plan.FailureThreshold, RolloutID: w.Plan.RolloutID, LabelledForRolloutID: w.Workload.Labelled,
	}
	if CarriesAbort(w.Plan) && w.Workload.Updated > desired {
		// An aborted batch is ready once its new pods are gone; some controls take them a few at a time.
		return upgrade(d, w)
	}
	if !w.Workload.Consistent || !BatchReady(in) {
		d.RequeueAfter = VerifyInterval
		if w.Workload.Consistent {
			d.ReadyWanted = ReadyWanted(in)
		}
		return d
	}
	d.Event = "batch is ready"
	d.BatchReady = true
	if mayProceed(cs.CurrentBatch, w.Plan) {
		// Paced by the Rollout: the next batch starts in this reconcile, its partition the one write of the
		// transition.
		d.Event = "batch is ready; the next batch starts"
		cs.CurrentBatch++
		return upgrade(d, w)
	}
	cs.CurrentBatchState = rolloutsv1beta1.ReadyBatchState
	now := metav1.NewTime(w.Now.Truncate(time.Second))
	cs.BatchReadyTime = &now
	return d
}

// mayProceed: the plan lets the release go beyond the current batch, and there is a batch beyond it.
func mayProceed(current int32, p rolloutsv1beta1.ReleasePlan) bool {
	return *p.BatchPartition > current && int(current)+1 < len(p.Batches)
}
