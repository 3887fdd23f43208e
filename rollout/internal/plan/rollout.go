package plan

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Messages upstream clients and users know.
const (
	MsgWorkloadNotFound   = "Workload Not Found"
	MsgHealthy            = "workload deployment is completed"
	MsgPaused             = "Rollout has been paused, you can resume it by kube-cli"
	MsgDisabling          = "Disabling rollout, release resources"
	MsgDisabled           = "Rollout is disabled"
	MsgTerminating        = "Rollout is in terminating"
	MsgCompleted          = "Rollout progressing has been completed"
	MsgFinalising         = "Rollout is finalising"
	MsgContinuousRelease  = "new version detected during a release; restarting from the first step"
	MsgRollbackInBatch    = "workload rolled back to the stable revision; rolling back in batches from the first step"
	MsgTrafficUnavailable = "the step routes traffic, but this manager runs no traffic routing provider"
	// MsgBlueGreenContinuous keeps upstream's advice.
	MsgBlueGreenContinuous = "new version detected during a blue-green release, which does not support continuous release; please rollback first"
)

// WorkloadObs is what the Rollout controller read from its workload.
type WorkloadObs struct {
	// InProgressing: the workload webhook marked a release of this Rollout.
	InProgressing  bool
	StableRevision string
	UpdateRevision string
	Replicas       int32
	// RolloutID is the workload's rollouts.kruise.io/rollout-id (label first, then annotation).
	RolloutID  string
	Generation int64
	// Consistent is false while the workload's own controller has not observed its latest spec; revisions
	// read from its status are stale until then.
	Consistent bool
}

// BatchObs is what the Rollout controller read from its BatchRelease.
type BatchObs struct {
	// ReadyStep is the 1-based step whose batch is ready under the plan the Rollout wants (0: none).
	ReadyStep int32
	// Completed: the BatchRelease finished finalizing the plan the Rollout wants.
	Completed bool
	// Failure is why the BatchRelease cannot move its workload, if it cannot.
	Failure string
	// Replicas and ReadyReplicas are the pods of the new revision and the ready ones, as the BatchRelease
	// last reported them.
	Replicas, ReadyReplicas int32
	// Plan is the release plan the BatchRelease carries; Batch is the batch it is at when Observed, that is
	// when its status reports that plan.
	Plan     rolloutsv1beta1.ReleasePlan
	Batch    int32
	Observed bool
}

// ObserveBatch is what a BatchRelease tells its Rollout. Readiness is read only from a BatchRelease that has
// observed its current spec, so a stale status never advances a step.
func ObserveBatch(br *rolloutsv1beta1.BatchRelease) *BatchObs {
	cs := br.Status.CanaryStatus
	obs := &BatchObs{Replicas: cs.UpdatedReplicas, ReadyReplicas: cs.UpdatedReadyReplicas, Plan: br.Spec.ReleasePlan}
	if c := GetCondition(br.Status.Conditions, ConditionStalled); c != nil && c.Status == corev1.ConditionTrue {
		obs.Failure = c.Message
	}
	if br.Status.ObservedGeneration != br.Generation || br.Status.ObservedReleasePlanHash != ReleasePlanHash(br.Spec.ReleasePlan) {
		return obs
	}
	if br.Spec.ReleasePlan.BatchPartition == nil {
		obs.Completed = br.Status.Phase == rolloutsv1beta1.RolloutPhaseCompleted
		return obs
	}
	obs.Observed, obs.Batch = true, cs.CurrentBatch
	// A BatchRelease goes beyond a batch only once it is ready, or when the Rollout jumped past it: the
	// steps of the batches before the current one are done.
	obs.ReadyStep = cs.CurrentBatch
	if cs.CurrentBatchState == rolloutsv1beta1.ReadyBatchState && cs.CurrentBatch == *br.Spec.ReleasePlan.BatchPartition {
		obs.ReadyStep = cs.CurrentBatch + 1
	}
	return obs
}

// RolloutWorld is everything the Rollout planner reads.
type RolloutWorld struct {
	Now time.Time
	// Name and Namespace name the Rollout, for the commands its messages suggest.
	Name, Namespace string
	Generation      int64
	Spec            rolloutsv1beta1.RolloutSpec
	Deleting        bool
	// Workload is nil when the workload does not exist; Batch is nil when no BatchRelease exists.
	Workload *WorkloadObs
	Batch    *BatchObs
	// NoTraffic: the Rollout routes no traffic, so every traffic step is done at once.
	NoTraffic bool
	// KeepPausedOnDelete leaves the workload frozen when the Rollout is deleted mid-release.
	KeepPausedOnDelete bool
	// TrafficUnavailable: the Rollout routes traffic but no traffic provider runs in this manager.
	TrafficUnavailable bool
	// Traffic is the outcome of the traffic task PlanTraffic named for the status read (nil: none ran).
	Traffic *TrafficObs
	// RollbackInBatch: the Rollout asks (rollouts.kruise.io/rollback-in-batch) to roll a reverted workload
	// back through the steps instead of at once, and may: it routes no traffic and its workload is a CloneSet
	// or StatefulSet.
	RollbackInBatch bool
	// Analysis is what the Rollout's RolloutAnalysis says of the current release (nil: none binds it).
	Analysis *AnalysisObs
}

// RolloutDecision is what the controller applies: the status, the BatchRelease it wants, and side effects.
type RolloutDecision struct {
	Status rolloutsv1beta1.RolloutStatus
	// Plan is the release plan the BatchRelease must carry (nil: no BatchRelease is wanted).
	Plan *rolloutsv1beta1.ReleasePlan
	// DeleteBatch asks for the BatchRelease to be deleted.
	DeleteBatch bool
	// ReleaseWorkload asks for the workload's in-progressing annotation to be removed.
	ReleaseWorkload bool
	// RemoveFinalizer: the Rollout may go.
	RemoveFinalizer bool
	Events          []string
	RequeueAfter    time.Duration
	Health          Health
	// Finished is the finalise reason of a release that ended with this decision.
	Finished string
	// waiting: the decision keeps the status as it is while the workload's controller catches up.
	waiting bool
}

// PlanRollout decides a Rollout's next move from its status and what the controller observed.
func PlanRollout(st rolloutsv1beta1.RolloutStatus, w RolloutWorld) RolloutDecision {
	d := RolloutDecision{Status: *st.DeepCopy()}
	switch {
	case w.Deleting:
		planTerminating(&d, w)
	case w.Workload == nil:
		planWorkloadGone(&d, w)
	case w.Spec.Disabled:
		planDisabled(&d, w)
	default:
		planEnabled(&d, w)
	}
	d.Status.ObservedGeneration = w.Generation
	mirrorStep(&d.Status)
	if !d.waiting {
		observeWorkload(&d.Status, w.Workload)
		d.Status.Conditions = KStatusConditions(d.Status.Conditions, d.Health, w.Now)
	}
	return d
}

// observeWorkload records the workload generation the status has seen whenever the status describes the
// workload's current revision, during a release and after it, as upstream does: scripts wait for
// observedWorkloadGeneration to equal the workload's metadata.generation to know their change was seen.
func observeWorkload(st *rolloutsv1beta1.RolloutStatus, wl *WorkloadObs) {
	sub := st.GetSubStatus()
	if sub == nil || wl == nil || !wl.Consistent {
		return
	}
	if rev := releasedRevision(st); rev != "" && rev == wl.UpdateRevision {
		sub.ObservedWorkloadGeneration = wl.Generation
	}
}

// releasedRevision is the revision a status describes: canaryRevision, or a blue-green updatedRevision.
func releasedRevision(st *rolloutsv1beta1.RolloutStatus) string {
	if st.BlueGreenStatus != nil {
		return st.BlueGreenStatus.UpdatedRevision
	}
	if st.CanaryStatus != nil {
		return st.CanaryStatus.CanaryRevision
	}
	return ""
}

// setReleasedRevision points the status at the revision the workload runs now: a workload rolled back at
// once describes its stable revision from then on.
func setReleasedRevision(st *rolloutsv1beta1.RolloutStatus, rev string) {
	if st.BlueGreenStatus != nil {
		st.BlueGreenStatus.UpdatedRevision = rev
	}
	if st.CanaryStatus != nil {
		st.CanaryStatus.CanaryRevision = rev
	}
}

func planTerminating(d *RolloutDecision, w RolloutWorld) {
	d.Status.Phase = rolloutsv1beta1.RolloutPhaseTerminating
	d.Status.Message = MsgTerminating
	d.Health = Health{Reconciling: true, Reason: ReasonTerminating, Message: MsgTerminating}
	setCond(d, rolloutsv1beta1.RolloutConditionTerminating, corev1.ConditionTrue, rolloutsv1beta1.TerminatingReasonInTerminating, MsgTerminating, w.Now)
	active := releaseActive(w, d.Status)
	if !active || finalise(d, w, rolloutsv1beta1.FinaliseReasonDelete) {
		setCond(d, rolloutsv1beta1.RolloutConditionTerminating, corev1.ConditionFalse, rolloutsv1beta1.TerminatingReasonCompleted, MsgTerminating, w.Now)
		d.RemoveFinalizer = true
		if active {
			d.Finished = rolloutsv1beta1.FinaliseReasonDelete
		}
	}
}

func planWorkloadGone(d *RolloutDecision, w RolloutWorld) {
	d.Status.Phase = rolloutsv1beta1.RolloutPhaseInitial
	d.Status.Message = MsgWorkloadNotFound
	d.Status.CanaryStatus, d.Status.BlueGreenStatus = nil, nil
	d.DeleteBatch = w.Batch != nil
	d.Health = Health{Stalled: true, Reason: ReasonWorkloadNotFound, Message: MsgWorkloadNotFound}
}

func planDisabled(d *RolloutDecision, w RolloutWorld) {
	if releaseActive(w, d.Status) {
		d.Status.Phase = rolloutsv1beta1.RolloutPhaseDisabling
		d.Status.Message = MsgDisabling
		d.Health = Health{Reconciling: true, Reason: ReasonDisabled, Message: MsgDisabling}
		if !finalise(d, w, rolloutsv1beta1.FinaliseReasonDisabled) {
			return
		}
	}
	if d.Status.Phase == rolloutsv1beta1.RolloutPhaseDisabling {
		d.Finished = rolloutsv1beta1.FinaliseReasonDisabled
	}
	d.Status.Phase = rolloutsv1beta1.RolloutPhaseDisabled
	d.Status.Message = MsgDisabled
	d.Health = Health{Reason: ReasonDisabled, Message: MsgDisabled}
}

// command is the kubectl-kruise command line that applies verb to this Rollout.
func (w RolloutWorld) command(verb string) string {
	return fmt.Sprintf("kubectl kruise rollout %s rollout/%s -n %s", verb, w.Name, w.Namespace)
}

// releaseActive: a release holds the workload (marked by the webhook, driven by a BatchRelease, or half
// finalised).
func releaseActive(w RolloutWorld, st rolloutsv1beta1.RolloutStatus) bool {
	if sub := st.GetSubStatus(); sub != nil && sub.FinalisingStep != "" {
		return true
	}
	return w.Batch != nil || (w.Workload != nil && w.Workload.InProgressing)
}

func planEnabled(d *RolloutDecision, w RolloutWorld) {
	if !w.Workload.Consistent && !finalising(d.Status) {
		waitForWorkload(d, w)
		return
	}
	switch d.Status.Phase {
	case rolloutsv1beta1.RolloutPhaseProgressing:
		planProgressing(d, w)
	case rolloutsv1beta1.RolloutPhaseHealthy:
		planHealthy(d, w)
	default:
		// "", Initial, Disabled, Disabling, Terminating (undeleted): finish releasing what a disable started,
		// then settle as Healthy.
		if finalising(d.Status) && !finalise(d, w, rolloutsv1beta1.FinaliseReasonDisabled) {
			return
		}
		becomeHealthy(d, w)
		planHealthy(d, w)
	}
}

// workloadSettleInterval is how soon a Rollout looks again at a workload whose controller lags behind, should
// the workload's status update not wake it first (it does for every workload the Rollout controller watches).
// Polled every second, a thousand Rollouts waiting for a busy kube-controller-manager made a third of the
// reconciles that reached the planner (one run with 20 workers).
const workloadSettleInterval = 5 * time.Second

// waitForWorkload keeps everything as it is, conditions included, until the workload's status is current
// again: the lag is short and routine, and reporting it would cost a status write each way.
func waitForWorkload(d *RolloutDecision, w RolloutWorld) {
	d.RequeueAfter = workloadSettleInterval
	d.waiting = true
	// Only an existing BatchRelease keeps its plan: one created now would carry the step of a status that may
	// be about to change (a release restarting for a newer version deletes its BatchRelease and waits on it).
	if sub := d.Status.GetSubStatus(); sub != nil && d.Status.Phase == rolloutsv1beta1.RolloutPhaseProgressing && w.Batch != nil {
		d.Plan = releasePlan(w, *sub, false)
	}
}

// finalising reports whether the Rollout is in the middle of its finalising steps.
func finalising(st rolloutsv1beta1.RolloutStatus) bool {
	sub := st.GetSubStatus()
	return sub != nil && sub.FinalisingStep != ""
}

func becomeHealthy(d *RolloutDecision, w RolloutWorld) {
	d.Status.Phase = rolloutsv1beta1.RolloutPhaseHealthy
	d.Status.Message = MsgHealthy
	// A workload already marked for a release (its template changed before this Rollout had a status) runs
	// a revision nobody released: recording it as completed would let planHealthy take the mark for one
	// left behind and report a release that never happened. planHealthy starts that release instead.
	if d.Status.GetSubStatus() == nil && !w.Workload.InProgressing {
		setSubStatus(&d.Status, w, completedFor(w))
	}
}

func completedFor(w RolloutWorld) rolloutsv1beta1.CommonStatus {
	st := CompletedRelease(w.Now, len(w.Spec.Strategy.GetSteps()))
	stampRelease(&st, w)
	return st
}

// stampRelease records which release a sub-status describes.
func stampRelease(st *rolloutsv1beta1.CommonStatus, w RolloutWorld) {
	st.ObservedWorkloadGeneration = w.Workload.Generation
	st.ObservedRolloutID = w.Workload.RolloutID
	st.RolloutHash = RolloutHash(w.Spec.Strategy)
	st.StableRevision = w.Workload.StableRevision
	st.PodTemplateHash = w.Workload.UpdateRevision
}

func planHealthy(d *RolloutDecision, w RolloutWorld) {
	d.Health = Health{Reason: ReasonCompleted, Message: MsgHealthy}
	if !w.Workload.InProgressing {
		d.DeleteBatch = w.Batch != nil
		return
	}
	if alreadyReleased(d.Status.GetSubStatus(), w.Workload) {
		// A mark left behind (or replayed by a stale cache) for the revision just released: clear it.
		d.ReleaseWorkload = true
		return
	}
	startRelease(d, w)
	planProgressing(d, w)
}

func alreadyReleased(sub *rolloutsv1beta1.CommonStatus, wl *WorkloadObs) bool {
	return sub != nil && sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted && sub.FinalisingStep == "" &&
		sub.PodTemplateHash == wl.UpdateRevision && sub.ObservedRolloutID == wl.RolloutID
}

func startRelease(d *RolloutDecision, w RolloutWorld) {
	d.Status.Phase = rolloutsv1beta1.RolloutPhaseProgressing
	st := NewRelease(w.Now, len(w.Spec.Strategy.GetSteps()))
	stampRelease(&st, w)
	setSubStatus(&d.Status, w, st)
	d.Status.Conditions = RemoveCondition(d.Status.Conditions, rolloutsv1beta1.RolloutConditionSucceeded)
	setCond(d, rolloutsv1beta1.RolloutConditionProgressing, corev1.ConditionTrue, rolloutsv1beta1.ProgressingReasonInitializing, "Rollout is in Progressing", w.Now)
	d.Events = append(d.Events, "start a new release of revision "+w.Workload.UpdateRevision)
}

func planProgressing(d *RolloutDecision, w RolloutWorld) {
	d.Health = Health{Reconciling: true, Reason: ReasonProgressing}
	cond := GetCondition(d.Status.Conditions, rolloutsv1beta1.RolloutConditionProgressing)
	reason := rolloutsv1beta1.ProgressingReasonInitializing
	if cond != nil {
		reason = cond.Reason
	}
	switch reason {
	case rolloutsv1beta1.ProgressingReasonFinalising:
		finishRelease(d, w, rolloutsv1beta1.FinaliseReasonSuccess)
	case rolloutsv1beta1.ProgressingReasonCancelling:
		finishRelease(d, w, rolloutsv1beta1.FinaliseReasonRollback)
	case rolloutsv1beta1.ProgressingReasonCompleted:
		becomeHealthy(d, w)
		d.Health = Health{Reason: ReasonCompleted, Message: MsgHealthy}
	default:
		planRolling(d, w)
	}
}

// planRolling handles Initializing, InRolling and Paused: rollback first, then an abort, then pause, then a new
// version, a changed plan, and finally the steps themselves.
func planRolling(d *RolloutDecision, w RolloutWorld) {
	sub := d.Status.GetSubStatus()
	why, reason, abort := w.Analysis.aborts()
	switch {
	case sub == nil:
		startRelease(d, w)
		planRolling(d, w)
	case reverted(w, sub) && !w.RollbackInBatch:
		setProgressing(d, rolloutsv1beta1.ProgressingReasonCancelling, "Rollout is rolling back to the stable revision", w.Now)
		setReleasedRevision(&d.Status, w.Workload.UpdateRevision)
		d.Events = append(d.Events, "rollback to the stable revision")
		finishRelease(d, w, rolloutsv1beta1.FinaliseReasonRollback)
	case abort && sub != nil && w.Workload.UpdateRevision == sub.PodTemplateHash:
		// Before a pause: an aborted release keeps its canary away whatever else is asked.
		abortRelease(d, w, sub, why, reason)
	case w.Spec.Strategy.Paused:
		setProgressing(d, rolloutsv1beta1.ProgressingReasonPaused, MsgPaused, w.Now)
		d.Status.Message = MsgPaused
		d.Plan = releasePlan(w, *sub, false)
		paceBatches(d, w, false)
		// A person paused it on purpose: healthy, waiting (kstatus InProgress), never a failure.
		d.Health = Health{Reconciling: true, Reason: ReasonPaused, Message: MsgPaused + "; to continue: " + w.command("resume")}
	case reverted(w, sub) && w.Workload.UpdateRevision != sub.PodTemplateHash:
		// Rollback in batches: the reverted revision is released again through the steps, from step 1.
		restartRelease(d, w, MsgRollbackInBatch)
	case w.Workload.UpdateRevision != sub.PodTemplateHash && w.Spec.Strategy.BlueGreen != nil:
		// Two revisions side by side leave no stable one to fall back to: a blue-green release must be
		// rolled back before a newer version can start.
		d.Status.Message = MsgBlueGreenContinuous
		d.Plan = releasePlan(w, *sub, false)
		d.Health = Health{Stalled: true, Reason: ReasonInvalid, Message: MsgBlueGreenContinuous}
	case w.Workload.UpdateRevision != sub.PodTemplateHash:
		restartRelease(d, w, MsgContinuousRelease)
	default:
		rollSteps(d, w, sub)
	}
}

// reverted: the workload's template is back at the stable revision.
func reverted(w RolloutWorld, sub *rolloutsv1beta1.CommonStatus) bool {
	return w.Workload.UpdateRevision == sub.StableRevision && sub.StableRevision != ""
}

// restartRelease begins again from the first step once the old BatchRelease is gone.
func restartRelease(d *RolloutDecision, w RolloutWorld, why string) {
	if d.Status.Message != why {
		// Once per restart, not on every reconcile that waits for the old BatchRelease to go.
		d.Events = append(d.Events, fmt.Sprintf("%s (revision %s replaces %s)", why,
			w.Workload.UpdateRevision, d.Status.GetSubStatus().PodTemplateHash))
	}
	if w.Batch != nil {
		d.DeleteBatch = true
		d.Status.Message = why
		return
	}
	stable := d.Status.GetSubStatus().StableRevision
	startRelease(d, w)
	sub := d.Status.GetSubStatus()
	if stable != "" {
		// The release being replaced never became stable: the stable revision is still the one before it.
		sub.StableRevision = stable
	}
	rollSteps(d, w, sub)
	// The new BatchRelease is created only once the status names the new revision: were it created now and
	// this status write lost, the next reconcile would take it for the old release's and delete it again.
	d.Plan = nil
	d.RequeueAfter = Soonest(d.RequeueAfter, restartRecheck)
}

// restartRecheck is how soon a restarted release looks again to create its BatchRelease, should the event
// of its own status write not wake it first.
const restartRecheck = time.Second

func rollSteps(d *RolloutDecision, w RolloutWorld, sub *rolloutsv1beta1.CommonStatus) {
	aborted := Aborted(d.Status)
	setProgressing(d, rolloutsv1beta1.ProgressingReasonInRolling, "Rollout is in Progressing", w.Now)
	steps := w.Spec.Strategy.GetSteps()
	if hash := RolloutHash(w.Spec.Strategy); hash != sub.RolloutHash && sub.RolloutHash == legacyStepsHash(steps) {
		sub.RolloutHash = hash
	} else if hash != sub.RolloutHash {
		sub.RolloutHash = hash
		sub.CurrentStepIndex = min(max(sub.CurrentStepIndex, 1), int32(len(steps))) //nolint:gosec // <= 50 steps
		sub.NextStepIndex = nextIndex(sub.CurrentStepIndex, len(steps))
		sub.CurrentStepState = rolloutsv1beta1.CanaryStepStateInit
		d.Events = append(d.Events, "the step plan changed; continuing from the current step")
	}
	if aborted {
		resumeAborted(d, sub, len(steps))
	}
	routed := !w.NoTraffic && !w.TrafficUnavailable
	hold := routed && !stepTrafficReady(d, w, sub)
	step := sub.CurrentStepIndex
	jumped := sub.NextStepIndex != nextIndex(step, len(steps))
	res := Advance(*sub, StepWorld{
		Now: w.Now, Steps: steps, BlueGreen: w.Spec.Strategy.BlueGreen != nil,
		ReadyStep: readyStep(w), NoTraffic: w.NoTraffic, TrafficStep: trafficStep(d, w, sub),
		Gates: w.Analysis.Gates(len(steps)),
	})
	*sub = res.Status
	if routed && sub.CurrentStepIndex != step {
		// A new step: its Services and routes are prepared by the next reconcile, before its batch grows.
		hold = true
		d.RequeueAfter = Soonest(d.RequeueAfter, trafficRecheck)
	}
	d.Events = append(d.Events, res.Events...)
	d.RequeueAfter = Soonest(d.RequeueAfter, res.RequeueAfter)
	countNewPods(&d.Status, w.Batch)
	d.Status.Message = analysisMessage(w, *sub, StepMessage(*sub, steps))
	if res.AwaitingApproval {
		// A gate that waits for a person is a normal part of a release (kstatus InProgress), not a failure.
		d.Health = Health{Reconciling: true, Reason: ReasonAwaitingApproval, Message: d.Status.Message + "; to continue: " + w.command("approve")}
		analysisHealth(d, w, *sub)
	}
	checkProgressDeadline(d, w, sub)
	reportBatchFailure(d, w.Batch)
	if w.TrafficUnavailable && sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateTrafficRouting {
		d.Status.Message = MsgTrafficUnavailable
		d.Health = Health{Stalled: true, Reason: ReasonTrafficUnavailable, Message: MsgTrafficUnavailable}
	}
	if w.Traffic != nil && w.Traffic.Failure != "" {
		// Reported again: the step machine may have written its own message since.
		reportTrafficFailure(d, w.Traffic.Failure)
	}
	if sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted {
		setProgressing(d, rolloutsv1beta1.ProgressingReasonFinalising, MsgFinalising, w.Now)
		finishRelease(d, w, rolloutsv1beta1.FinaliseReasonSuccess)
		return
	}
	d.Plan = heldPlan(w, *sub, hold)
	if !jumped {
		paceBatches(d, w, mayLead(w, *sub))
	}
}

// paceBatches lets the BatchRelease start the next batch by itself the moment the current one is ready, when
// nothing is to happen between the two (mayLead). A transition then costs one write, the next batch's
// partition, where the BatchRelease's status, the Rollout's patch of it and the partition follow one another
// otherwise. The BatchRelease runs one batch ahead of the Rollout's step at most, and only under the plan it
// already carries, partition aside. A batch it has started is never taken back (by a pause, an edited pause
// or plan): it is in flight, as a batch the Rollout had started would be. A step jump still moves it. A
// BatchRelease is never created leading: it would start at the partition, skipping the batch before it.
func paceBatches(d *RolloutDecision, w RolloutWorld, lead bool) {
	p, b := d.Plan, w.Batch
	if !w.NoTraffic || p == nil || p.BatchPartition == nil || b == nil || b.Plan.BatchPartition == nil {
		return
	}
	next := *p.BatchPartition + 1
	if int(next) >= len(p.Batches) {
		return
	}
	started := b.Observed && b.Batch == next
	carried := samePlanBut(b.Plan, *p) && (*b.Plan.BatchPartition == next || b.Observed && b.Batch == next-1)
	if started || lead && carried {
		p.BatchPartition = &next
	}
}

// mayLead: the current step of a partition-style release goes on to the next at once (pause 0), no analysis
// may hold it, and the Rollout is not paused. (Pacing applies only to a Rollout that routes no traffic.)
func mayLead(w RolloutWorld, sub rolloutsv1beta1.CommonStatus) bool {
	s := w.Spec.Strategy
	steps := s.GetSteps()
	step, ok := stepAt(steps, sub.CurrentStepIndex)
	return ok && int(sub.CurrentStepIndex) < len(steps) && !s.Paused && !w.Analysis.mayHold(sub.CurrentStepIndex) &&
		s.GetRollingStyle() == rolloutsv1beta1.PartitionRollingStyle &&
		step.Pause.Duration != nil && *step.Pause.Duration == 0
}

// samePlanBut: two release plans differ at most in their partition.
func samePlanBut(a, b rolloutsv1beta1.ReleasePlan) bool {
	return hashAtPartition(a, b.BatchPartition) == ReleasePlanHash(b)
}

// countNewPods copies the BatchRelease's count of new pods into the status (canaryReplicas and
// canaryReadyReplicas, or updatedReplicas and updatedReadyReplicas of a blue-green release).
func countNewPods(st *rolloutsv1beta1.RolloutStatus, b *BatchObs) {
	switch {
	case b == nil:
	case st.CanaryStatus != nil:
		st.CanaryStatus.CanaryReplicas, st.CanaryStatus.CanaryReadyReplicas = b.Replicas, b.ReadyReplicas
	case st.BlueGreenStatus != nil:
		st.BlueGreenStatus.UpdatedReplicas, st.BlueGreenStatus.UpdatedReadyReplicas = b.Replicas, b.ReadyReplicas
	}
}

// stepTrafficReady: the network is ready for the current step's batch to grow. Before a traffic step the
// canary Service exists and the stable Service selects only stable pods, so new pods never receive stable
// traffic; before a step that routes nothing the previous step's routes are gone.
func stepTrafficReady(d *RolloutDecision, w RolloutWorld, sub *rolloutsv1beta1.CommonStatus) bool {
	if sub.CurrentStepState != rolloutsv1beta1.CanaryStepStateInit && sub.CurrentStepState != rolloutsv1beta1.CanaryStepStateUpgrade {
		return true
	}
	return trafficSettled(d, w, sub.CurrentStepIndex, TrafficPrepare, TrafficClear)
}

// trafficStep is the step whose routes are in place and settled (0: none).
func trafficStep(d *RolloutDecision, w RolloutWorld, sub *rolloutsv1beta1.CommonStatus) int32 {
	if w.NoTraffic || w.Traffic == nil || w.Traffic.Task.Step != sub.CurrentStepIndex {
		return 0
	}
	if sub.CurrentStepState != rolloutsv1beta1.CanaryStepStateTrafficRouting && w.Traffic.Task.Kind != TrafficClear {
		return 0
	}
	if !trafficSettled(d, w, sub.CurrentStepIndex, TrafficRoute, TrafficClear) {
		return 0
	}
	return sub.CurrentStepIndex
}

// heldPlan is the release plan of the current step, or, while the network is not ready for it, of the step
// before (no BatchRelease at all before the first).
func heldPlan(w RolloutWorld, sub rolloutsv1beta1.CommonStatus, hold bool) *rolloutsv1beta1.ReleasePlan {
	p := releasePlan(w, sub, false)
	if !hold {
		return p
	}
	if sub.CurrentStepIndex <= 1 {
		if w.Batch == nil {
			return nil
		}
		return p
	}
	previous := sub.CurrentStepIndex - 2
	p.BatchPartition = &previous
	return p
}

// readyStep is the step whose batch is ready. A BatchRelease still carrying an aborted release's plan is
// ready with no new pod, which says nothing of a step.
func readyStep(w RolloutWorld) int32 {
	if w.Batch == nil || CarriesAbort(w.Batch.Plan) {
		return 0
	}
	return w.Batch.ReadyStep
}

// finishRelease runs the finalising steps of a release; at the end the Rollout is Healthy again.
func finishRelease(d *RolloutDecision, w RolloutWorld, reason string) {
	if !finalise(d, w, reason) {
		return
	}
	sub := d.Status.GetSubStatus()
	sub.CurrentStepState = rolloutsv1beta1.CanaryStepStateCompleted
	succeeded := corev1.ConditionTrue
	if reason != rolloutsv1beta1.FinaliseReasonSuccess {
		succeeded = corev1.ConditionFalse
	}
	setCond(d, rolloutsv1beta1.RolloutConditionSucceeded, succeeded, reason, MsgCompleted, w.Now)
	setCond(d, rolloutsv1beta1.RolloutConditionProgressing, corev1.ConditionFalse, rolloutsv1beta1.ProgressingReasonCompleted, MsgCompleted, w.Now)
	d.Events = append(d.Events, MsgCompleted)
	d.Finished = reason
	becomeHealthy(d, w)
	d.Health = Health{Reason: ReasonCompleted, Message: MsgHealthy}
}

// finalise advances the finalising steps as far as the world allows and reports whether all are done.
func finalise(d *RolloutDecision, w RolloutWorld, reason string) bool {
	sub := d.Status.GetSubStatus()
	if sub == nil {
		st := CompletedRelease(w.Now, len(w.Spec.Strategy.GetSteps()))
		setSubStatus(&d.Status, w, st)
		sub = d.Status.GetSubStatus()
	}
	d.ReleaseWorkload = w.Workload != nil && w.Workload.InProgressing
	blueGreen := w.Spec.Strategy.BlueGreen != nil
	if d.Status.Message == "" || d.Status.Phase == rolloutsv1beta1.RolloutPhaseProgressing {
		d.Status.Message = MsgFinalising
	}
	for range maxTransitions {
		if sub.FinalisingStep == "" || sub.FinalisingStep == rolloutsv1beta1.FinalisingStepWaitEndless {
			sub.FinalisingStep = NextFinalisingStep(reason, blueGreen, "")
		}
		if sub.FinalisingStep == rolloutsv1beta1.FinalisingStepTypeEnd {
			sub.FinalisingStep = ""
			sub.CurrentStepState = rolloutsv1beta1.CanaryStepStateCompleted
			return true
		}
		if !finalisingStepDone(d, w, sub, reason) {
			return false
		}
		sub.FinalisingStep = NextFinalisingStep(reason, blueGreen, sub.FinalisingStep)
	}
	return false
}

// finalisingStepDone applies one finalising step and reports whether it is complete.
func finalisingStepDone(d *RolloutDecision, w RolloutWorld, sub *rolloutsv1beta1.CommonStatus, reason string) bool {
	switch sub.FinalisingStep {
	case rolloutsv1beta1.FinalisingStepResumeWorkload:
		marked := w.Workload != nil && w.Workload.InProgressing
		switch {
		case reason == rolloutsv1beta1.FinaliseReasonDelete && w.KeepPausedOnDelete:
			// Deleting the BatchRelease while it still names a batch hands the workload over frozen.
			return true
		case w.Batch == nil && !marked:
			// No release holds the workload.
			return settled(d, w, reason)
		}
		// The workload webhook keeps a marked workload frozen, so the mark goes before anything resumes it: in
		// the same reconcile (ReleaseWorkload), before the BatchRelease is given its finalizing plan or created
		// with it. A marked workload without a BatchRelease may still be frozen: a continuous release deletes
		// the old BatchRelease (which hands the workload over frozen) before it creates the next one, and the
		// webhook freezes a new revision before the first one exists.
		plan := releasePlan(w, *sub, true)
		plan.FinalizingPolicy = FinalizingPolicy(reason)
		d.Plan = plan
		// The BatchRelease is deleted with its finalizing plan: it then finalizes, and lets its finalizer go,
		// in one reconcile, and gone it counts as done like a Completed one (a failure keeps it, Stalled).
		d.DeleteBatch = w.Batch != nil
		reportBatchFailure(d, w.Batch)
		return w.Batch != nil && w.Batch.Completed
	case rolloutsv1beta1.FinalisingStepReleaseWorkloadControl:
		d.DeleteBatch = w.Batch != nil
		return w.Batch == nil && settled(d, w, reason)
	default:
		// Service and route steps: nothing to restore when the Rollout routes no traffic.
		return w.NoTraffic || w.TrafficUnavailable || trafficSettled(d, w, 0, TrafficTaskKind(sub.FinalisingStep))
	}
}

// settled: the workload's controller has observed what releasing it changed (a resumed Deployment's new
// generation), so that the status that ends the release records that generation, which scripts wait for, in
// the same write. A Rollout being deleted does not wait for it. Until then the Rollout looks again after
// workloadSettleInterval, though the workload's status update usually wakes it first.
func settled(d *RolloutDecision, w RolloutWorld, reason string) bool {
	if reason == rolloutsv1beta1.FinaliseReasonDelete || w.Workload == nil || w.Workload.Consistent {
		return true
	}
	d.RequeueAfter = Soonest(d.RequeueAfter, workloadSettleInterval)
	return false
}

// reportBatchFailure shows a BatchRelease's Stalled condition, if any, as the Rollout's message and Stalled.
func reportBatchFailure(d *RolloutDecision, b *BatchObs) {
	if b == nil || b.Failure == "" {
		return
	}
	msg := "the BatchRelease cannot move the workload: " + b.Failure
	d.Status.Message = msg
	d.Health = Health{Stalled: true, Reason: ReasonBatchReleaseFailed, Message: msg}
}

// releasePlan is the plan the BatchRelease carries for a sub-status; finalising releases every batch.
func releasePlan(w RolloutWorld, sub rolloutsv1beta1.CommonStatus, finalising bool) *rolloutsv1beta1.ReleasePlan {
	s := w.Spec.Strategy
	p := &rolloutsv1beta1.ReleasePlan{RollingStyle: s.GetRollingStyle()}
	if w.Workload != nil {
		p.RolloutID = w.Workload.RolloutID
	}
	for _, step := range s.GetSteps() {
		p.Batches = append(p.Batches, rolloutsv1beta1.ReleaseBatch{CanaryReplicas: batchReplicas(step)})
	}
	if c := s.Canary; c != nil {
		p.FailureThreshold = c.FailureThreshold
		p.PatchPodTemplateMetadata = c.PatchPodTemplateMetadata
		p.EnableExtraWorkloadForCanary = c.EnableExtraWorkloadForCanary
	} else if s.BlueGreen != nil {
		p.FailureThreshold = s.BlueGreen.FailureThreshold
	}
	if !finalising {
		partition := max(sub.CurrentStepIndex-1, 0)
		p.BatchPartition = &partition
	}
	return p
}

func batchReplicas(step rolloutsv1beta1.CanaryStep) intstr.IntOrString {
	if step.Replicas != nil {
		return *step.Replicas
	}
	return fullRelease
}

func setSubStatus(st *rolloutsv1beta1.RolloutStatus, w RolloutWorld, common rolloutsv1beta1.CommonStatus) {
	if w.Spec.Strategy.BlueGreen != nil {
		st.CanaryStatus = nil
		st.BlueGreenStatus = &rolloutsv1beta1.BlueGreenStatus{CommonStatus: common, UpdatedRevision: common.PodTemplateHash}
		return
	}
	st.BlueGreenStatus = nil
	st.CanaryStatus = &rolloutsv1beta1.CanaryStatus{CommonStatus: common, CanaryRevision: common.PodTemplateHash}
}

// mirrorStep copies the sub-status step to the top-level fields v1beta1 printer columns read.
func mirrorStep(st *rolloutsv1beta1.RolloutStatus) {
	if sub := st.GetSubStatus(); sub != nil {
		st.CurrentStepIndex, st.CurrentStepState = sub.CurrentStepIndex, sub.CurrentStepState
	}
}

func setProgressing(d *RolloutDecision, reason, msg string, now time.Time) {
	setCond(d, rolloutsv1beta1.RolloutConditionProgressing, corev1.ConditionTrue, reason, msg, now)
}

func setCond(d *RolloutDecision, t rolloutsv1beta1.RolloutConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) {
	d.Status.Conditions = SetCondition(d.Status.Conditions, NewCondition(t, s, reason, msg), now)
}

// Describe is a one-line summary of a decision, for logs.
func (d RolloutDecision) Describe() string {
	sub := d.Status.GetSubStatus()
	if sub == nil {
		return string(d.Status.Phase)
	}
	return fmt.Sprintf("%s step %d %s %s", d.Status.Phase, sub.CurrentStepIndex, sub.CurrentStepState, sub.FinalisingStep)
}
