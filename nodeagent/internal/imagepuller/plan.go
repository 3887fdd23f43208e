// Package imagepuller is the node agent's NodeImage executor: it pulls the images its node's NodeImage lists
// through CRI and reports each pull task in the NodeImage's status. Planning is pure (Compute, Finish,
// Status, Credentials); the controller applies the plan: it starts and cancels pull attempts and writes the
// status.
package imagepuller

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Upstream's defaults for a tag without pullPolicy.
const (
	DefaultTimeout      = 600 * time.Second
	DefaultBackoffLimit = 3
	// firstBackoff doubles after each failed attempt up to maxBackoff, as upstream's puller waits.
	firstBackoff = time.Second
	maxBackoff   = 30 * time.Second
)

// MessageDeadlineExceeded is upstream's message for a task stopped at activeDeadlineSeconds.
const MessageDeadlineExceeded = "pulling exceeds the activeDeadlineSeconds"

// Key names one pull task: an image name (no tag) and a tag.
type Key struct {
	Image, Tag string
}

// Ref is the reference the task pulls. A tag that is a digest (algorithm:hex, as ImagePullJobs of
// name@digest images write it) is joined with "@".
func (k Key) Ref() string {
	if strings.Contains(k.Tag, ":") {
		return k.Image + "@" + k.Tag
	}
	return k.Image + ":" + k.Tag
}

func (k Key) String() string { return k.Ref() }

// Task is the agent's state of one pull task, for one version of its tag.
type Task struct {
	Version int64
	// Phase is Waiting until the first attempt starts, Pulling until it succeeds or gives up.
	Phase                     kruiseappsv1alpha1.ImagePullPhase
	StartTime, CompletionTime time.Time
	// Attempt counts the attempts started; Running says the last one is in flight since AttemptStart.
	Attempt      int32
	Running      bool
	AttemptStart time.Time
	// AttemptTimeout bounds the running attempt.
	AttemptTimeout time.Duration
	// NextAttempt is the earliest start of the next attempt (the backoff after a failed one).
	NextAttempt      time.Time
	Progress         int32
	ImageID, Message string
	// Reason classifies the last failed attempt (see Classify); empty after a success.
	Reason string
}

// Finished reports whether the task succeeded or gave up.
func (t Task) Finished() bool {
	return t.Phase == kruiseappsv1alpha1.ImagePhaseSucceeded || t.Phase == kruiseappsv1alpha1.ImagePhaseFailed
}

// Input is what a plan is computed from.
type Input struct {
	Spec kruiseappsv1alpha1.NodeImageSpec
	// Status is the NodeImage's current status: finished tasks the agent no longer remembers (it restarted)
	// are taken from it rather than pulled again.
	Status kruiseappsv1alpha1.NodeImageStatus
	// Tasks is the agent's state from the previous plan, updated by Finish.
	Tasks map[Key]Task
	Now   time.Time
	// MaxRunning bounds the attempts in flight; 0 or less means no bound.
	MaxRunning int
}

// Start is an attempt to launch now.
type Start struct {
	Key     Key
	Attempt int32
	// Timeout bounds the attempt: the tag's timeoutSeconds, cut short by its activeDeadlineSeconds.
	Timeout time.Duration
	Image   kruiseappsv1alpha1.ImageSpec
	Tag     kruiseappsv1alpha1.ImageTagSpec
}

// Plan is what the agent does next.
type Plan struct {
	// Tasks replaces Input.Tasks.
	Tasks map[Key]Task
	Start []Start
	// Cancel lists the keys whose in-flight attempt must stop: the tag left the spec or changed version,
	// the attempt overran its timeout, or the task its deadline.
	Cancel []Key
	// Failed lists the tasks this plan gave up on (deadline or a timed-out last attempt), for events.
	Failed []Key
	Status kruiseappsv1alpha1.NodeImageStatus
	// RequeueAfter is when the plan changes with time alone (a backoff, timeout or deadline ends); 0: never.
	RequeueAfter time.Duration
}

// Compute plans the node's pull tasks.
func Compute(in Input) Plan {
	p := Plan{Tasks: map[Key]Task{}}
	specs := specTags(in.Spec)
	running := 0
	for k, t := range in.Tasks {
		if s, ok := specs[k]; !ok || s.tag.Version != t.Version {
			p.cancelIfRunning(k, t)
			continue
		}
		if t.Running {
			running++
		}
	}
	slots := in.MaxRunning - running
	for _, k := range sortedKeys(specs) {
		t := current(in, k, specs[k].tag)
		t = p.expire(k, t, specs[k].tag, in.Now)
		if !t.Finished() && !t.Running && !in.Now.Before(t.NextAttempt) && (in.MaxRunning <= 0 || slots > 0) {
			t = p.start(k, t, specs[k], in.Now)
			slots--
		}
		p.Tasks[k] = t
		p.requeue(t, specs[k].tag, in.Now)
	}
	p.Status = Status(in.Spec, p.Tasks, in.Status, in.Now)
	return p
}

type tagOf struct {
	image kruiseappsv1alpha1.ImageSpec
	tag   kruiseappsv1alpha1.ImageTagSpec
}

func specTags(spec kruiseappsv1alpha1.NodeImageSpec) map[Key]tagOf {
	out := map[Key]tagOf{}
	for name, img := range spec.Images {
		for _, tag := range img.Tags {
			out[Key{Image: name, Tag: tag.Tag}] = tagOf{image: img, tag: tag}
		}
	}
	return out
}

func sortedKeys(m map[Key]tagOf) []Key {
	keys := make([]Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int { return cmp.Or(cmp.Compare(a.Image, b.Image), cmp.Compare(a.Tag, b.Tag)) })
	return keys
}

// current is the task's state: the agent's own for the spec's version, else the status's finished one
// for that version, else a new task.
func current(in Input, k Key, tag kruiseappsv1alpha1.ImageTagSpec) Task {
	if t, ok := in.Tasks[k]; ok && t.Version == tag.Version {
		return t
	}
	for _, s := range in.Status.ImageStatuses[k.Image].Tags {
		if s.Tag == k.Tag && s.Version == tag.Version && s.CompletionTime != nil {
			return fromStatus(s)
		}
	}
	return Task{Version: tag.Version, Phase: kruiseappsv1alpha1.ImagePhaseWaiting}
}

func fromStatus(s kruiseappsv1alpha1.ImageTagStatus) Task {
	t := Task{Version: s.Version, Phase: s.Phase, CompletionTime: s.CompletionTime.Time, Progress: s.Progress,
		ImageID: s.ImageID, Message: s.Message}
	if s.StartTime != nil {
		t.StartTime = s.StartTime.Time
	}
	return t
}

func (p *Plan) cancelIfRunning(k Key, t Task) {
	if t.Running {
		p.Cancel = append(p.Cancel, k)
	}
}

// expire ends a task past its activeDeadlineSeconds and an attempt past its timeout (the runtime should
// have given up by itself; this covers one that does not).
func (p *Plan) expire(k Key, t Task, tag kruiseappsv1alpha1.ImageTagSpec, now time.Time) Task {
	if t.Finished() || t.Phase == kruiseappsv1alpha1.ImagePhaseWaiting {
		return t
	}
	if d, ok := deadline(t, tag); ok && !now.Before(d) {
		p.cancelIfRunning(k, t)
		p.Failed = append(p.Failed, k)
		t.Running = false
		return fail(t, MessageDeadlineExceeded, ReasonDeadline, now)
	}
	if t.Running && !now.Before(t.AttemptStart.Add(t.AttemptTimeout)) {
		p.Cancel = append(p.Cancel, k)
		t, _ = Finish(t, t.Attempt, Result{Err: timedOut(k, t.AttemptTimeout), Reason: ReasonTimeout}, tag, now)
		if t.Finished() {
			p.Failed = append(p.Failed, k)
		}
	}
	return t
}

// timedOut is the error of an attempt that ran out its timeout.
func timedOut(k Key, timeout time.Duration) error {
	return fmt.Errorf("pulling image %s timed out after %v", k, timeout)
}

func (p *Plan) start(k Key, t Task, s tagOf, now time.Time) Task {
	if t.Phase == kruiseappsv1alpha1.ImagePhaseWaiting {
		t.Phase, t.StartTime = kruiseappsv1alpha1.ImagePhasePulling, now
	}
	t.Attempt++
	t.Running, t.AttemptStart, t.AttemptTimeout = true, now, attemptTimeout(t, s.tag, now)
	p.Start = append(p.Start, Start{Key: k, Attempt: t.Attempt, Timeout: t.AttemptTimeout, Image: s.image, Tag: s.tag})
	return t
}

// attemptTimeout is the tag's timeout, cut to what is left before its deadline.
func attemptTimeout(t Task, tag kruiseappsv1alpha1.ImageTagSpec, now time.Time) time.Duration {
	timeout := DefaultTimeout
	if pp := tag.PullPolicy; pp != nil && pp.TimeoutSeconds != nil && *pp.TimeoutSeconds > 0 {
		timeout = time.Duration(*pp.TimeoutSeconds) * time.Second
	}
	if d, ok := deadline(t, tag); ok {
		timeout = min(timeout, d.Sub(now))
	}
	return timeout
}

func deadline(t Task, tag kruiseappsv1alpha1.ImageTagSpec) (time.Time, bool) {
	if pp := tag.PullPolicy; pp != nil && pp.ActiveDeadlineSeconds != nil && !t.StartTime.IsZero() {
		return t.StartTime.Add(time.Duration(*pp.ActiveDeadlineSeconds) * time.Second), true
	}
	return time.Time{}, false
}

// requeue keeps the soonest moment at which time alone changes the task.
func (p *Plan) requeue(t Task, tag kruiseappsv1alpha1.ImageTagSpec, now time.Time) {
	if t.Finished() || t.Phase == kruiseappsv1alpha1.ImagePhaseWaiting && t.Attempt == 0 && !t.Running {
		return
	}
	var at []time.Time
	if t.Running {
		at = append(at, t.AttemptStart.Add(t.AttemptTimeout))
	} else {
		at = append(at, t.NextAttempt)
	}
	if d, ok := deadline(t, tag); ok {
		at = append(at, d)
	}
	wait := max(slices.MinFunc(at, func(a, b time.Time) int { return a.Compare(b) }).Sub(now), time.Millisecond)
	if p.RequeueAfter == 0 || wait < p.RequeueAfter {
		p.RequeueAfter = wait
	}
}

// Result is how one attempt ended.
type Result struct {
	// ImageID is the pulled (or already present) image's ID.
	ImageID string
	Err     error
	// Reason classifies Err (Classify).
	Reason string
}

// Finish records the end of attempt of task t at now; it returns the task and whether it just finished. A
// result for another attempt than the one in flight (cancelled, overtaken) changes nothing.
func Finish(t Task, attempt int32, res Result, tag kruiseappsv1alpha1.ImageTagSpec, now time.Time) (Task, bool) {
	if !t.Running || attempt != t.Attempt || t.Finished() {
		return t, false
	}
	t.Running = false
	if res.Err == nil {
		t.Phase, t.CompletionTime, t.Progress, t.ImageID, t.Message, t.Reason =
			kruiseappsv1alpha1.ImagePhaseSucceeded, now, 100, res.ImageID, "", ""
		return t, true
	}
	if t.Attempt > backoffLimit(tag) {
		return fail(t, res.Err.Error(), res.Reason, now), true
	}
	t.NextAttempt, t.Message, t.Reason = now.Add(backoff(t.Attempt)), res.Err.Error(), res.Reason
	return t, false
}

func fail(t Task, msg, reason string, now time.Time) Task {
	t.Phase, t.CompletionTime, t.Message, t.Reason = kruiseappsv1alpha1.ImagePhaseFailed, now, msg, reason
	return t
}

// backoffLimit is the number of retries after the first attempt; a negative one means the default, as
// upstream reads it.
func backoffLimit(tag kruiseappsv1alpha1.ImageTagSpec) int32 {
	if pp := tag.PullPolicy; pp != nil && pp.BackoffLimit != nil && *pp.BackoffLimit >= 0 {
		return *pp.BackoffLimit
	}
	return DefaultBackoffLimit
}

// backoff is the wait after the n-th failed attempt: 1s, 2s, 4s, ... at most 30s.
func backoff(n int32) time.Duration {
	if n >= 6 {
		return maxBackoff
	}
	return min(firstBackoff<<max(n-1, 0), maxBackoff)
}

// Status is the NodeImage status the tasks make: upstream's counters and per-tag statuses (tags sorted by
// name), and firstSyncStatus, kept once set and set when every task of the node first finished.
func Status(spec kruiseappsv1alpha1.NodeImageSpec, tasks map[Key]Task, prev kruiseappsv1alpha1.NodeImageStatus, now time.Time) kruiseappsv1alpha1.NodeImageStatus {
	out := kruiseappsv1alpha1.NodeImageStatus{FirstSyncStatus: prev.FirstSyncStatus, ImageStatuses: map[string]kruiseappsv1alpha1.ImageStatus{}}
	for name, img := range spec.Images {
		out.Desired += int32(len(img.Tags))
		var tags []kruiseappsv1alpha1.ImageTagStatus
		for _, tag := range img.Tags {
			if t, ok := tasks[Key{Image: name, Tag: tag.Tag}]; ok {
				tags = append(tags, tagStatus(tag.Tag, t))
				count(&out, t.Phase)
			}
		}
		if len(tags) > 0 {
			slices.SortFunc(tags, func(a, b kruiseappsv1alpha1.ImageTagStatus) int { return cmp.Compare(a.Tag, b.Tag) })
			out.ImageStatuses[name] = kruiseappsv1alpha1.ImageStatus{Tags: tags}
		}
	}
	if len(out.ImageStatuses) == 0 {
		out.ImageStatuses = nil
	}
	if out.FirstSyncStatus == nil && out.Desired > 0 && out.Succeeded+out.Failed == out.Desired {
		out.FirstSyncStatus = firstSync(out, now)
	}
	return out
}

// count adds a task to upstream's counters; Waiting tasks count in none of them.
func count(s *kruiseappsv1alpha1.NodeImageStatus, phase kruiseappsv1alpha1.ImagePullPhase) {
	switch phase {
	case kruiseappsv1alpha1.ImagePhaseSucceeded:
		s.Succeeded++
	case kruiseappsv1alpha1.ImagePhaseFailed:
		s.Failed++
	case kruiseappsv1alpha1.ImagePhasePulling:
		s.Pulling++
	}
}

func firstSync(s kruiseappsv1alpha1.NodeImageStatus, now time.Time) *kruiseappsv1alpha1.SyncStatus {
	if s.Failed == 0 {
		return &kruiseappsv1alpha1.SyncStatus{SyncAt: stamp(now), Status: kruiseappsv1alpha1.SyncStatusSucceeded}
	}
	var failed []string
	for name, img := range s.ImageStatuses {
		for _, t := range img.Tags {
			if t.Phase == kruiseappsv1alpha1.ImagePhaseFailed {
				failed = append(failed, name+":"+t.Tag)
			}
		}
	}
	slices.Sort(failed)
	return &kruiseappsv1alpha1.SyncStatus{SyncAt: stamp(now), Status: kruiseappsv1alpha1.SyncStatusFailed,
		Message: fmt.Sprintf("failed to pull %v", failed)}
}

func tagStatus(tag string, t Task) kruiseappsv1alpha1.ImageTagStatus {
	s := kruiseappsv1alpha1.ImageTagStatus{Tag: tag, Phase: t.Phase, Progress: t.Progress, Version: t.Version,
		ImageID: t.ImageID, Message: t.Message}
	if !t.StartTime.IsZero() {
		s.StartTime = ptrTo(stamp(t.StartTime))
	}
	if !t.CompletionTime.IsZero() {
		s.CompletionTime = ptrTo(stamp(t.CompletionTime))
	}
	return s
}

// stamp drops what the API does not store (below a second, the monotonic clock), so that a status read
// back equals the one written.
func stamp(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second).UTC()) }

func ptrTo[T any](v T) *T { return &v }
