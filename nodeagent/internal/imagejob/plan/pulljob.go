package plan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Reasons of the ImagePullJob's events. A node's failed pull is recorded by its node agent (PullImageFailed).
const (
	ReasonStarted          = "Started"
	ReasonNodeGone         = "NodeGone"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonCompleted        = "Completed"
	// ReasonNoNodeAgent is the reason the ContainerRecreateRequest manager gives for the same silence.
	ReasonNoNodeAgent = "NodeAgentNotResponding"
)

// Messages of the failures the controller decides itself; the agent reports the others.
const (
	MessageNodeGone        = "the node is gone: its NodeImage was deleted while it pulled"
	MessageDeadlinePulling = "the job exceeded its activeDeadlineSeconds while the node pulled"
	MessageDeadlineWaiting = "the job exceeded its activeDeadlineSeconds before the node started"
)

// ResponseTimeout is how long a node's agent has to report, in any phase, the version of the tag the job
// wrote into its NodeImage before the node counts as failed: a dead agent or a NotReady node never reports,
// and the job would wait for it forever. Upstream's NodeImage controller fails such a tag after the same minute.
const ResponseTimeout = time.Minute

// MessageNoResponse is the failure of a node whose agent did not report in time (upstream's status message,
// and why).
var MessageNoResponse = fmt.Sprintf("node has not responded for a long time: its agent did not report the image within %s", ResponseTimeout)

// ActiveNodesAnnotation records on an ImagePullJob of completionPolicy Always the nodes that pulled for it at
// its last reconcile: a node whose NodeImage disappears meanwhile takes its tag along, and only this record
// says it was pulling, so that it counts as failed rather than silently leaving the job.
const ActiveNodesAnnotation = "imagepulljobs.flotilla.dev/active-nodes"

// Upstream's tag policies for a job of completionPolicy Never: its tags go a day after they finished, and the
// job, which keeps covering its nodes, asks again (a daily check that the image is still there); a pull
// may take half an hour.
const (
	NeverTTLSeconds             = int32(24 * 3600)
	NeverActiveDeadlineSeconds  = int64(1800)
	maxFailuresInMessage        = 3
	maxFailureMessageCharacters = 200
)

// Event is an event about the job; Action tells events of one reason apart (the broadcaster folds events of one
// reason and action into a series that keeps the first message).
type Event struct {
	Type, Reason, Action, Message string
}

// Input is what one reconcile knows of an unfinished ImagePullJob.
type Input struct {
	Now time.Time
	// Job is read only; Image and Tag are its spec.image split by imagepullspec.SplitImage.
	Job        *kruiseappsv1alpha1.ImagePullJob
	Image, Tag string
	// Selected are the NodeImages the job selects (SelectNodes), sorted by name.
	Selected []*kruiseappsv1alpha1.NodeImage
	// Existing names every NodeImage there is, selected or not.
	Existing map[string]bool
}

// Decision is what the controller carries out for one reconcile of an unfinished job.
type Decision struct {
	// Activate names the nodes whose NodeImage gets the job's tag now.
	Activate []string
	// Active are the nodes pulling for the job once Activate is written (ActiveNodesAnnotation).
	Active []string
	// Status is the job's next status, counting Activate as active.
	Status kruiseappsv1alpha1.ImagePullJobStatus
	Events []Event
	// Wake is how soon the job wants another look (its deadline, or the first agent due to report); 0 for none.
	Wake time.Duration
}

// failure is a failed node and why.
type failure struct{ node, message string }

// nodes are the job's nodes by state.
type nodes struct {
	succeeded, active, waiting []string
	failed                     []failure
	// gone are the nodes that left while pulling, and silent those whose agent did not report in time, since
	// the last reconcile.
	gone, silent []string
	// reportDue is how long until the first active node's agent not yet reporting is due (0: none waits).
	reportDue time.Duration
}

// Decide runs one step of an unfinished job: the nodes it starts within its parallelism, its counts from the
// NodeImages, and its end, complete or past its deadline.
func Decide(in Input) Decision {
	d := Decision{Status: *in.Job.Status.DeepCopy()}
	started := d.Status.StartTime == nil
	if started {
		d.Status.StartTime = ptr.To(metav1.NewTime(in.Now))
	}
	n := classify(in)
	d.recordGone(in, n.gone)
	d.recordSilent(in, n.silent)
	if left, ok := DeadlineLeft(in.Job, in.Now); ok && left <= 0 {
		d.expire(in, n)
		return d
	} else if ok {
		d.wakeIn(left)
	}
	d.activate(in, &n)
	d.wakeIn(n.reportDue)
	if len(d.Activate) > 0 {
		// The tags written now are created now: their agents are due a full ResponseTimeout from here.
		d.wakeIn(ResponseTimeout)
	}
	d.count(n)
	if started {
		d.event(corev1.EventTypeNormal, ReasonStarted, "Start", fmt.Sprintf("Pulling %s on %d nodes, %d at a time",
			in.Job.Spec.Image, d.Status.Desired, Parallelism(in.Job)))
	}
	if !isNever(in.Job) && len(n.active) == 0 && len(n.waiting) == 0 {
		d.complete(in, n)
	}
	d.Status.Message = runningMessage(in.Job, &d.Status, n)
	return d
}

// classify sorts the selected nodes by state and, for a job that completes, adds the nodes that were
// pulling for it or had failed and have since gone, as failed.
func classify(in Input) nodes {
	var n nodes
	selected := map[string]bool{}
	for _, ni := range in.Selected {
		selected[ni.Name] = true
		switch state, msg := StateOf(ni, in.Image, in.Tag, in.Job.UID); state {
		case Succeeded:
			n.succeeded = append(n.succeeded, ni.Name)
		case Failed:
			n.failed = append(n.failed, failure{ni.Name, msg})
		case Active:
			n.addActive(in, ni)
		case Waiting:
			n.waiting = append(n.waiting, ni.Name)
		}
	}
	if !isNever(in.Job) {
		n.addGone(in, selected)
	}
	return n
}

// addActive counts a node whose tag is not finished as active, unless its agent has not reported the tag's
// version within ResponseTimeout of its creation: the node then fails, as upstream's NodeImage controller
// fails the tag. An agent that reports later, while the job runs, counts again by what it reports.
func (n *nodes) addActive(in Input, ni *kruiseappsv1alpha1.NodeImage) {
	left, waiting := reportLeft(ni, in.Image, in.Tag, in.Now)
	switch {
	case !waiting:
		n.active = append(n.active, ni.Name)
	case left > 0:
		n.active = append(n.active, ni.Name)
		if n.reportDue == 0 || left < n.reportDue {
			n.reportDue = left
		}
	default:
		n.failed = append(n.failed, failure{ni.Name, MessageNoResponse})
		if !slices.Contains(in.Job.Status.FailedNodes, ni.Name) {
			n.silent = append(n.silent, ni.Name)
		}
	}
}

// addGone counts as failed the nodes that were pulling or had failed and whose NodeImage is gone. A job of
// policy Never covers whatever nodes there are: nodes leaving it (scaled down) are no failure.
func (n *nodes) addGone(in Input, selected map[string]bool) {
	failedBefore := in.Job.Status.FailedNodes
	for _, name := range sortedUnion(ActiveNodes(in.Job), failedBefore) {
		if selected[name] || in.Existing[name] {
			continue
		}
		n.failed = append(n.failed, failure{name, MessageNodeGone})
		if !slices.Contains(failedBefore, name) {
			n.gone = append(n.gone, name)
		}
	}
}

func (d *Decision) recordGone(in Input, gone []string) {
	for _, name := range gone {
		d.event(corev1.EventTypeWarning, ReasonNodeGone, "Node "+name, fmt.Sprintf("Node %s is gone while it pulled %s: counted as failed",
			name, in.Job.Spec.Image))
	}
}

func (d *Decision) recordSilent(in Input, silent []string) {
	for _, name := range silent {
		d.event(corev1.EventTypeWarning, ReasonNoNodeAgent, "Node "+name, fmt.Sprintf("Node %s did not report %s within %s: its agent is not responding, counted as failed",
			name, in.Job.Spec.Image, ResponseTimeout))
	}
}

// wakeIn makes the job look again within after (0 asks nothing).
func (d *Decision) wakeIn(after time.Duration) {
	if after > 0 && (d.Wake == 0 || after < d.Wake) {
		d.Wake = after
	}
}

// activate starts the first waiting nodes (by name) in the slots the job's parallelism leaves.
func (d *Decision) activate(in Input, n *nodes) {
	k := min(max(Parallelism(in.Job)-len(n.active), 0), len(n.waiting))
	d.Activate = slices.Clone(n.waiting[:k])
	n.active = append(n.active, d.Activate...)
	n.waiting = n.waiting[k:]
}

// count writes the counts of n into the status; the nodes still waiting count as desired only.
func (d *Decision) count(n nodes) {
	st := &d.Status
	st.Desired = int32(len(n.succeeded) + len(n.failed) + len(n.active) + len(n.waiting))
	st.Active, st.Succeeded, st.Failed = int32(len(n.active)), int32(len(n.succeeded)), int32(len(n.failed))
	st.FailedNodes = nil
	for _, f := range n.failed {
		st.FailedNodes = append(st.FailedNodes, f.node)
	}
	slices.Sort(st.FailedNodes)
	d.Active = slices.Sorted(slices.Values(n.active))
}

// expire ends a job past its activeDeadlineSeconds: its nodes still pulling and those that never started fail,
// as upstream counts them; the controller then takes the job's tags back, which stops the pulls.
func (d *Decision) expire(in Input, n nodes) {
	for _, name := range n.active {
		n.failed = append(n.failed, failure{name, MessageDeadlinePulling})
	}
	for _, name := range n.waiting {
		n.failed = append(n.failed, failure{name, MessageDeadlineWaiting})
	}
	n.active, n.waiting = nil, nil
	d.count(n)
	d.Status.CompletionTime = ptr.To(metav1.NewTime(in.Now))
	d.Status.Message = "job exceeds activeDeadlineSeconds" + failureSummary(n.failed)
	d.event(corev1.EventTypeWarning, ReasonDeadlineExceeded, "Fail", fmt.Sprintf("Job exceeded its activeDeadlineSeconds (%ds): %d of %d nodes failed",
		*in.Job.Spec.CompletionPolicy.ActiveDeadlineSeconds, d.Status.Failed, d.Status.Desired))
}

// complete ends a job of policy Always whose every node finished.
func (d *Decision) complete(in Input, n nodes) {
	d.Status.CompletionTime = ptr.To(metav1.NewTime(in.Now))
	if len(n.failed) == 0 {
		d.event(corev1.EventTypeNormal, ReasonCompleted, "Complete", fmt.Sprintf("Pulled %s on all %d nodes", in.Job.Spec.Image, d.Status.Desired))
		return
	}
	d.event(corev1.EventTypeWarning, ReasonCompleted, "Complete", fmt.Sprintf("Pulled %s on %d of %d nodes, %d failed%s",
		in.Job.Spec.Image, d.Status.Succeeded, d.Status.Desired, d.Status.Failed, failureSummary(n.failed)))
}

func (d *Decision) event(eventType, reason, action, message string) {
	d.Events = append(d.Events, Event{Type: eventType, Reason: reason, Action: action, Message: message})
}

// runningMessage is upstream's summary of the job, with its first failures and why.
func runningMessage(job *kruiseappsv1alpha1.ImagePullJob, st *kruiseappsv1alpha1.ImagePullJobStatus, n nodes) string {
	var msg string
	switch {
	case st.CompletionTime != nil:
		msg = "job has completed"
	case st.Desired == 0:
		msg = "job is running, no progress"
	default:
		msg = fmt.Sprintf("job is running, progress %.1f%%", 100*float64(st.Succeeded+st.Failed)/float64(st.Desired))
	}
	if st.CompletionTime == nil && Parallelism(job) == 0 && len(n.waiting) > 0 {
		msg += ", paused (parallelism 0)"
	}
	return msg + failureSummary(n.failed)
}

// failureSummary names the first failed nodes (by name) and why, for a status message or an event.
func failureSummary(failed []failure) string {
	if len(failed) == 0 {
		return ""
	}
	sorted := slices.SortedFunc(slices.Values(failed), func(a, b failure) int { return strings.Compare(a.node, b.node) })
	parts := make([]string, 0, maxFailuresInMessage)
	for _, f := range sorted[:min(len(sorted), maxFailuresInMessage)] {
		parts = append(parts, f.node+": "+truncate(f.message, maxFailureMessageCharacters))
	}
	s := fmt.Sprintf("; %d failed (%s", len(failed), strings.Join(parts, "; "))
	if more := len(failed) - maxFailuresInMessage; more > 0 {
		s += fmt.Sprintf("; and %d more", more)
	}
	return s + ")"
}

// truncate keeps the end of a long message: an error's cause (a registry's "401 Unauthorized") comes last.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + strings.ToValidUTF8(s[len(s)-n:], "")
}

// Finished reports whether the job has ended: a completion time (a job of policy Never never gets one).
func Finished(job *kruiseappsv1alpha1.ImagePullJob) bool { return job.Status.CompletionTime != nil }

// AfterFinish says what is left of a finished job's life: deleteJob once its ttlSecondsAfterFinished has
// passed, else how long until then (0: no TTL).
func AfterFinish(cp kruiseappsv1alpha1.CompletionPolicy, done *metav1.Time, now time.Time) (deleteJob bool, wake time.Duration) {
	if cp.TTLSecondsAfterFinished == nil || done == nil {
		return false, 0
	}
	left := done.Add(time.Duration(*cp.TTLSecondsAfterFinished) * time.Second).Sub(now)
	return left <= 0, max(left, 0)
}

// DeadlineLeft is how long a job of policy Always has until its activeDeadlineSeconds after its start (now,
// before it started); ok is false without a deadline.
func DeadlineLeft(job *kruiseappsv1alpha1.ImagePullJob, now time.Time) (time.Duration, bool) {
	cp := job.Spec.CompletionPolicy
	if isNever(job) || cp.ActiveDeadlineSeconds == nil {
		return 0, false
	}
	start := now
	if job.Status.StartTime != nil {
		start = job.Status.StartTime.Time
	}
	return start.Add(time.Duration(*cp.ActiveDeadlineSeconds) * time.Second).Sub(now), true
}

func isNever(job *kruiseappsv1alpha1.ImagePullJob) bool {
	return job.Spec.CompletionPolicy.Type == kruiseappsv1alpha1.Never
}

// Parallelism is how many nodes pull for the job at once: spec.parallelism (a whole number, as an integer or
// a string), 1 when unset or unreadable, never below 0 (0 pauses the job).
func Parallelism(job *kruiseappsv1alpha1.ImagePullJob) int {
	p := job.Spec.Parallelism
	if p == nil {
		return int(kruiseappsv1alpha1.DefaultImagePullJobParallelism)
	}
	if p.Type == intstr.String {
		v, err := strconv.Atoi(p.StrVal)
		if err != nil {
			return int(kruiseappsv1alpha1.DefaultImagePullJobParallelism)
		}
		return max(v, 0)
	}
	return max(int(p.IntVal), 0)
}

// ActiveNodes reads ActiveNodesAnnotation.
func ActiveNodes(job *kruiseappsv1alpha1.ImagePullJob) []string {
	v := job.Annotations[ActiveNodesAnnotation]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// ActiveNodesValue is ActiveNodesAnnotation's value for nodes (sorted); empty for none.
func ActiveNodesValue(nodes []string) string { return strings.Join(nodes, ",") }

func sortedUnion(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// NewTagRequest is the tag job writes into a node's NodeImage now, with the copies of its pull secrets.
func NewTagRequest(job *kruiseappsv1alpha1.ImagePullJob, image, tag string, secrets []kruiseappsv1alpha1.ReferenceObject, now time.Time) TagRequest {
	pullPolicy := job.Spec.ImagePullPolicy
	if pullPolicy == "" {
		pullPolicy = kruiseappsv1alpha1.DefaultImagePullPolicy
	}
	return TagRequest{Image: image, Tag: tag, Owner: OwnerReference(job), CreatedAt: metav1.NewTime(now),
		PullPolicy: tagPullPolicy(job, now), ImagePullPolicy: pullPolicy, SandboxConfig: job.Spec.SandboxConfig, Secrets: secrets}
}

// tagPullPolicy: the job's timeout and backoff limit (upstream's defaults when unset). A job of policy Always
// takes its tags back when it finishes, so they need no TTL, and their deadline is what is left of the job's,
// so that the agent stops about when the job gives up; policy Never gets upstream's TTL and deadline.
func tagPullPolicy(job *kruiseappsv1alpha1.ImagePullJob, now time.Time) *kruiseappsv1alpha1.ImageTagPullPolicy {
	p := &kruiseappsv1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To(kruiseappsv1alpha1.DefaultImagePullTimeoutSeconds),
		BackoffLimit: ptr.To(kruiseappsv1alpha1.DefaultImagePullBackoffLimit)}
	if pp := job.Spec.PullPolicy; pp != nil {
		p.TimeoutSeconds = ptr.To(ptr.Deref(pp.TimeoutSeconds, *p.TimeoutSeconds))
		p.BackoffLimit = ptr.To(ptr.Deref(pp.BackoffLimit, *p.BackoffLimit))
	}
	if isNever(job) {
		p.TTLSecondsAfterFinished, p.ActiveDeadlineSeconds = ptr.To(NeverTTLSeconds), ptr.To(NeverActiveDeadlineSeconds)
		return p
	}
	if left, ok := DeadlineLeft(job, now); ok {
		p.ActiveDeadlineSeconds = ptr.To(max(int64(math.Ceil(left.Seconds())), 1))
	}
	return p
}
