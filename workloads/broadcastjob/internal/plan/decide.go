package plan

import (
	"fmt"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Reasons of the job's events (upstream's, but for FailedPodFound, which upstream spells "failed pod is found").
const (
	ReasonContinue          = "Continue"
	ReasonPaused            = "Paused"
	ReasonFailedPodFound    = "FailedPodFound"
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	ReasonJobComplete       = "JobComplete"
	ReasonTooManyActivePods = "TooManyActivePods"
	ReasonDuplicatePod      = "DuplicatePodCreatedOnSameNode"
)

// Input is what one reconcile knows of a job.
type Input struct {
	Now time.Time
	// Job is read only.
	Job   *kruiseappsv1alpha1.BroadcastJob
	Nodes []*corev1.Node
	// Pods are the pods the job controls, those being deleted included.
	Pods []*corev1.Pod
}

// Event is an event about the job.
type Event struct {
	Type, Reason, Message string
}

// Decision is what the controller carries out for one reconcile.
type Decision struct {
	// DeleteJob: the job finished and its ttlSecondsAfterFinished has passed.
	DeleteJob bool
	// Create names the nodes that get a pod now; Delete the pods to delete.
	Create []string
	Delete []*corev1.Pod
	// Status is the job's next status, counting this decision's creates and deletes as done (upstream's).
	Status kruiseappsv1alpha1.BroadcastJobStatus
	Events []Event
	// Wake is how soon the job wants another look (its deadline, its TTL); 0 for none.
	Wake time.Duration
}

// Decide runs one step of the job's life.
func Decide(in Input) Decision {
	if Finished(in.Job) {
		return decideFinished(in)
	}
	d := Decision{Status: *in.Job.Status.DeepCopy()}
	st := &d.Status
	if st.StartTime == nil {
		st.StartTime = ptrTime(in.Now)
	}
	if st.Phase == "" {
		st.Phase = kruiseappsv1alpha1.PhaseRunning
	}
	d.Wake = untilDeadline(in)
	s := newStep(in)
	s.count(st)
	if st.Phase == kruiseappsv1alpha1.PhaseFailed || d.pause(in, s) {
		return d
	}
	if reason, message := failure(in, s); reason != "" {
		d.fail(in, s, reason, message)
		return d
	}
	d.progress(in, s)
	return d
}

// Finished reports whether the job has ended for good: a Complete or Failed condition, and completionPolicy
// Always (a job of policy Never keeps covering new nodes whatever its conditions say).
func Finished(job *kruiseappsv1alpha1.BroadcastJob) bool {
	if job.Spec.CompletionPolicy.Type == kruiseappsv1alpha1.Never {
		return false
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == kruiseappsv1alpha1.JobComplete || c.Type == kruiseappsv1alpha1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// decideFinished leaves a finished job's status alone: it deletes pods a failure left running, and the job
// once its ttlSecondsAfterFinished has passed.
func decideFinished(in Input) Decision {
	d := Decision{Status: in.Job.Status}
	for _, p := range in.Pods {
		if running(p) {
			d.Delete = append(d.Delete, p)
		}
	}
	ttl, done := in.Job.Spec.CompletionPolicy.TTLSecondsAfterFinished, in.Job.Status.CompletionTime
	if ttl == nil || done == nil {
		return d
	}
	left := done.Add(time.Duration(*ttl) * time.Second).Sub(in.Now)
	if left <= 0 {
		d.DeleteJob = true
	} else {
		d.Wake = left
	}
	return d
}

// untilDeadline is how long a job of policy Always has until activeDeadlineSeconds, if it has a deadline
// still ahead.
func untilDeadline(in Input) time.Duration {
	cp, start := in.Job.Spec.CompletionPolicy, in.Job.Status.StartTime
	if cp.Type == kruiseappsv1alpha1.Never || cp.ActiveDeadlineSeconds == nil {
		return 0
	}
	at := in.Now
	if start != nil {
		at = start.Time
	}
	return max(at.Add(time.Duration(*cp.ActiveDeadlineSeconds)*time.Second).Sub(in.Now), 0)
}

// step is what Decide works out from the pods and nodes.
type step struct {
	counts    Counts
	placement Placement
	active    int32
	failed    int32
}

func newStep(in Input) *step {
	limit := in.Job.Spec.FailurePolicy.RestartLimit
	s := &step{counts: Classify(in.Pods, limit), placement: Place(in.Nodes, &in.Job.Spec.Template.Spec, in.Pods, limit)}
	s.active, s.failed = int32(len(s.counts.Active)), int32(len(s.counts.Failed))
	return s
}

func (s *step) count(st *kruiseappsv1alpha1.BroadcastJobStatus) {
	st.Active, st.Failed = s.active, s.failed
	st.Succeeded, st.Desired = int32(len(s.counts.Succeeded)), int32(s.placement.Desired)
}

// pause keeps a paused job from doing anything but count: spec.paused, or failurePolicy Pause once a pod
// failed (until the failed pods are gone or the policy changes). A job that resumes says so.
func (d *Decision) pause(in Input, s *step) bool {
	st := &d.Status
	byFailure := in.Job.Spec.FailurePolicy.Type == kruiseappsv1alpha1.FailurePolicyTypePause && s.failed > 0
	if !in.Job.Spec.Paused && !byFailure {
		if st.Phase == kruiseappsv1alpha1.PhasePaused {
			st.Phase = kruiseappsv1alpha1.PhaseRunning
			d.event(corev1.EventTypeNormal, ReasonContinue, "continue to process job")
		}
		return false
	}
	if st.Phase != kruiseappsv1alpha1.PhasePaused && !in.Job.Spec.Paused {
		d.event(corev1.EventTypeWarning, ReasonPaused, "job is paused, due to failed pod")
	}
	st.Phase = kruiseappsv1alpha1.PhasePaused
	return true
}

// failure says why the job fails now, if it does: a failed pod under failurePolicy FailFast, or (policy
// Always) activeDeadlineSeconds passed since the start.
func failure(in Input, s *step) (reason, message string) {
	j := in.Job
	if s.failed > 0 && j.Spec.FailurePolicy.Type == kruiseappsv1alpha1.FailurePolicyTypeFailFast {
		return ReasonFailedPodFound, "failure policy is FailurePolicyTypeFailFast and failed pod is found"
	}
	if j.Spec.CompletionPolicy.ActiveDeadlineSeconds != nil && j.Spec.CompletionPolicy.Type != kruiseappsv1alpha1.Never &&
		untilDeadline(in) == 0 {
		return ReasonDeadlineExceeded, fmt.Sprintf("Job %s/%s was active longer than specified deadline", j.Namespace, j.Name)
	}
	return "", ""
}

// fail ends the job as Failed: its running pods are deleted and count as failed, as upstream counts them. Pods
// already being deleted that have not ended count too: a failure decided before, whose status write was lost,
// deleted them.
func (d *Decision) fail(in Input, s *step, reason, message string) {
	var dying int32
	for _, p := range in.Pods {
		switch {
		case running(p):
			d.Delete = append(d.Delete, p)
		case p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
			dying++
		}
	}
	d.Status.Failed += s.active + dying
	d.Status.Active = 0
	d.finish(in, kruiseappsv1alpha1.PhaseFailed, kruiseappsv1alpha1.JobFailed, message)
	d.event(corev1.EventTypeWarning, reason, fmt.Sprintf("%s: %d pods succeeded, %d pods failed", message, d.Status.Succeeded, d.Status.Failed))
}

// progress moves a running job on: pods off the nodes they no longer fit, new pods on pending nodes within
// parallelism, and completion once every desired node has run its pod.
func (d *Decision) progress(in Input, s *step) {
	for _, node := range s.placement.Duplicates {
		d.event(corev1.EventTypeWarning, ReasonDuplicatePod, "Duplicated pods found on same node "+node)
	}
	d.deleteMisplaced(s)
	if in.Job.DeletionTimestamp == nil {
		d.create(in, s)
	}
	if complete(in.Job, s.placement) {
		st := &d.Status
		d.finish(in, kruiseappsv1alpha1.PhaseCompleted, kruiseappsv1alpha1.JobComplete,
			fmt.Sprintf("Job completed, %d pods succeeded, %d pods failed", st.Succeeded, st.Failed))
		d.event(corev1.EventTypeNormal, ReasonJobComplete, fmt.Sprintf("Job %s/%s is completed, %d pods succeeded, %d pods failed",
			in.Job.Namespace, in.Job.Name, st.Succeeded, st.Failed))
	}
}

// deleteMisplaced deletes the pods on nodes they no longer fit; a running one counts as failed, as upstream
// counts it.
func (d *Decision) deleteMisplaced(s *step) {
	for _, p := range s.placement.Misplaced {
		d.Delete = append(d.Delete, p)
		if slices.Contains(s.counts.Active, p) {
			d.Status.Active--
			d.Status.Failed++
		}
	}
}

// create gives pending nodes a pod, in node name order, while fewer than parallelism pods are active.
func (d *Decision) create(in Input, s *step) {
	limit := Parallelism(in.Job.Spec.Parallelism, s.placement.Desired)
	active := d.Status.Active
	if active > limit {
		d.event(corev1.EventTypeWarning, ReasonTooManyActivePods, "Number of active pods exceed parallelism limit")
		return
	}
	n := min(int(limit-active), len(s.placement.Pending))
	d.Create = s.placement.Pending[:n]
	d.Status.Active += int32(n)
}

// Parallelism is how many pods may be active at once: a count, or a percentage of the desired pods rounded
// up; unset (or unreadable, which the webhook refuses) means no limit.
func Parallelism(p *intstr.IntOrString, desired int) int32 {
	if p == nil {
		return math.MaxInt32
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(p, desired, true)
	if err != nil {
		return math.MaxInt32
	}
	return int32(max(min(v, math.MaxInt32), 0))
}

// complete reports whether a job of policy Always is done: it has desired nodes, and each has a pod that
// ended (or is being deleted).
func complete(job *kruiseappsv1alpha1.BroadcastJob, p Placement) bool {
	return job.Spec.CompletionPolicy.Type != kruiseappsv1alpha1.Never && p.Desired > 0 && len(p.Pending) == 0 && p.Busy == 0
}

// finish records the job's end: its phase, a True condition of type t with upstream's reason (the type's
// name) and message, and the completion time.
func (d *Decision) finish(in Input, phase kruiseappsv1alpha1.BroadcastJobPhase, t kruiseappsv1alpha1.JobConditionType, message string) {
	now := metav1.NewTime(in.Now)
	d.Status.Phase = phase
	d.Status.Conditions = append(d.Status.Conditions, kruiseappsv1alpha1.JobCondition{
		Type: t, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now, Reason: string(t), Message: message,
	})
	d.Status.CompletionTime = &now
	if ttl := in.Job.Spec.CompletionPolicy.TTLSecondsAfterFinished; ttl != nil {
		d.Wake = time.Duration(*ttl) * time.Second
	} else {
		d.Wake = 0
	}
}

func (d *Decision) event(eventType, reason, message string) {
	d.Events = append(d.Events, Event{Type: eventType, Reason: reason, Message: message})
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
