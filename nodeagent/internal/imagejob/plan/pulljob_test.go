package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	succeeded = kruiseappsv1alpha1.ImagePhaseSucceeded
	failed    = kruiseappsv1alpha1.ImagePhaseFailed
	pulling   = kruiseappsv1alpha1.ImagePhasePulling
)

var mine = []types.UID{jobUID}

// want is the part of a decision a case checks.
type want struct {
	activate, active         []string
	desired, act, succ, fail int32
	failedNodes              []string
	completed                bool
	message                  string
	reasons                  []string
	wake                     time.Duration
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name     string
		job      *kruiseappsv1alpha1.ImagePullJob
		selected []*kruiseappsv1alpha1.NodeImage
		existing []string
		want     want
	}{{
		name:     "a new job starts as many nodes as its parallelism, by name",
		job:      pullJob(2),
		selected: []*kruiseappsv1alpha1.NodeImage{node("a", nil), node("b", nil), node("c", nil)},
		want: want{activate: []string{"a", "b"}, active: []string{"a", "b"}, desired: 3, act: 2,
			message: "job is running, progress 0.0%", reasons: []string{ReasonStarted}, wake: ResponseTimeout},
	}, {
		name: "a node pulling takes a slot; a newer tag version than the status reported is still pulling",
		job:  pullJob(3, started),
		selected: []*kruiseappsv1alpha1.NodeImage{tagged("a", mine, succeeded, 1, ""), tagged("b", mine, "", 0, ""),
			node("c", nil), node("d", nil)},
		want: want{activate: []string{"c"}, active: []string{"a", "b", "c"}, desired: 4, act: 3, message: "job is running, progress 0.0%",
			wake: ResponseTimeout},
	}, {
		name: "results come from the NodeImages' status of the tag's version; another job's tag is not ours",
		job:  pullJob(1, started),
		selected: []*kruiseappsv1alpha1.NodeImage{tagged("a", mine, succeeded, 2, ""), tagged("b", mine, failed, 2, "401 Unauthorized"),
			tagged("c", mine, pulling, 2, ""), tagged("d", []types.UID{"other"}, succeeded, 2, "")},
		want: want{active: []string{"c"}, desired: 4, act: 1, succ: 1, fail: 1, failedNodes: []string{"b"},
			message: "job is running, progress 50.0%; 1 failed (b: 401 Unauthorized)"},
	}, {
		name:     "every node finished: the job completes, saying which failed",
		job:      pullJob(1, started),
		selected: []*kruiseappsv1alpha1.NodeImage{tagged("a", mine, succeeded, 2, ""), tagged("b", mine, failed, 2, "not found")},
		want: want{desired: 2, succ: 1, fail: 1, failedNodes: []string{"b"}, completed: true,
			message: "job has completed; 1 failed (b: not found)", reasons: []string{ReasonCompleted}},
	}, {
		name: "no node selected: a job of policy Always completes at once",
		job:  pullJob(1),
		want: want{completed: true, message: "job has completed", reasons: []string{ReasonStarted, ReasonCompleted}},
	}, {
		name:     "a job of policy Never does not complete",
		job:      pullJob(1, started, never),
		selected: []*kruiseappsv1alpha1.NodeImage{tagged("a", mine, succeeded, 2, "")},
		want:     want{desired: 1, succ: 1, message: "job is running, progress 100.0%"},
	}, {
		name:     "parallelism 0 pauses the job",
		job:      pullJob(0, started),
		selected: []*kruiseappsv1alpha1.NodeImage{node("a", nil)},
		want:     want{desired: 1, message: "job is running, progress 0.0%, paused (parallelism 0)"},
	}, {
		name:     "before its deadline the job wakes at it",
		job:      pullJob(1, started, deadline(60)),
		selected: []*kruiseappsv1alpha1.NodeImage{tagged("a", mine, pulling, 2, "")},
		want:     want{active: []string{"a"}, desired: 1, act: 1, message: "job is running, progress 0.0%", wake: 40 * time.Second},
	}, {
		name:     "past its deadline the job fails its nodes still pulling and those never started",
		job:      pullJob(1, started, deadline(10)),
		selected: []*kruiseappsv1alpha1.NodeImage{tagged("a", mine, succeeded, 2, ""), tagged("b", mine, pulling, 2, ""), node("c", nil)},
		want: want{desired: 3, succ: 1, fail: 2, failedNodes: []string{"b", "c"}, completed: true,
			message: "job exceeds activeDeadlineSeconds; 2 failed (b: " + MessageDeadlinePulling + "; c: " + MessageDeadlineWaiting + ")",
			reasons: []string{ReasonDeadlineExceeded}},
	}, {
		name:     "a node gone while pulling fails, once recorded; a failed node gone stays failed; one left alive is no longer counted",
		job:      pullJob(1, started, activeBefore("gone,moved"), failedBefore("failed-gone")),
		selected: []*kruiseappsv1alpha1.NodeImage{tagged("a", mine, pulling, 2, "")},
		existing: []string{"a", "moved"},
		want: want{active: []string{"a"}, desired: 3, act: 1, fail: 2, failedNodes: []string{"failed-gone", "gone"},
			message: "job is running, progress 66.7%; 2 failed (failed-gone: " + MessageNodeGone + "; gone: " + MessageNodeGone + ")",
			reasons: []string{ReasonNodeGone}},
	}, {
		name:     "a job of policy Never just loses the nodes that go",
		job:      pullJob(1, started, never, activeBefore("gone")),
		selected: []*kruiseappsv1alpha1.NodeImage{tagged("a", mine, succeeded, 2, "")},
		existing: []string{"a"},
		want:     want{desired: 1, succ: 1, message: "job is running, progress 100.0%"},
	}, {
		name: "a node whose agent did not report the tag's version within a minute of its creation fails; others wait for theirs",
		job:  pullJob(3, started),
		selected: []*kruiseappsv1alpha1.NodeImage{
			asked(-40, tagged("a", mine, "", 0, "")),        // no status, exactly a minute: failed
			asked(-45, tagged("b", mine, pulling, 1, "")),   // only an older version reported: failed
			asked(-45, tagged("c", mine, pulling, 2, "")),   // reported, however long ago asked: active
			asked(0, tagged("d", mine, "", 0, "")),          // asked 20 s ago: active, due in 40 s
			asked(-45, tagged("e", mine, succeeded, 2, "")), // finished
			node("f", nil)},
		want: want{activate: []string{"f"}, active: []string{"c", "d", "f"}, desired: 6, act: 3, succ: 1, fail: 2,
			failedNodes: []string{"a", "b"}, message: "job is running, progress 50.0%; 2 failed (a: " + MessageNoResponse + "; b: " + MessageNoResponse + ")",
			reasons: []string{ReasonNoNodeAgent, ReasonNoNodeAgent}, wake: 40 * time.Second},
	}, {
		name:     "a node already failed for its silence is recorded once; the job completes with it failed",
		job:      pullJob(1, started, failedBefore("a")),
		selected: []*kruiseappsv1alpha1.NodeImage{asked(-60, tagged("a", mine, "", 0, "")), tagged("b", mine, succeeded, 2, "")},
		want: want{desired: 2, succ: 1, fail: 1, failedNodes: []string{"a"}, completed: true,
			message: "job has completed; 1 failed (a: " + MessageNoResponse + ")", reasons: []string{ReasonCompleted}},
	}, {
		name:     "the job wakes at whichever comes first, its deadline or an agent's report",
		job:      pullJob(1, started, deadline(50)),
		selected: []*kruiseappsv1alpha1.NodeImage{asked(0, tagged("a", mine, "", 0, ""))},
		want:     want{active: []string{"a"}, desired: 1, act: 1, message: "job is running, progress 0.0%", wake: 30 * time.Second},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			existing := map[string]bool{}
			for _, ni := range tc.selected {
				existing[ni.Name] = true
			}
			for _, n := range tc.existing {
				existing[n] = true
			}
			d := Decide(Input{Now: at(20), Job: tc.job, Image: "nginx", Tag: "1.27", Selected: tc.selected, Existing: existing})
			if diff := cmp.Diff(tc.want, got(d), cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			if tc.job.Status.StartTime == nil && !d.Status.StartTime.Time.Equal(at(20)) {
				t.Errorf("startTime %v, want now", d.Status.StartTime)
			}
		})
	}
}

func got(d Decision) want {
	st := d.Status
	w := want{activate: d.Activate, active: d.Active, desired: st.Desired, act: st.Active, succ: st.Succeeded, fail: st.Failed,
		failedNodes: st.FailedNodes, completed: st.CompletionTime != nil, message: st.Message, wake: d.Wake}
	for _, e := range d.Events {
		w.reasons = append(w.reasons, e.Reason)
	}
	return w
}

func TestDecideEvents(t *testing.T) {
	job := pullJob(1, started, deadline(10), activeBefore("gone"))
	d := Decide(Input{Now: at(20), Job: job, Image: "nginx", Tag: "1.27", Existing: map[string]bool{}})
	want := []Event{
		{Type: corev1.EventTypeWarning, Reason: ReasonNodeGone, Action: "Node gone", Message: "Node gone is gone while it pulled nginx:1.27: counted as failed"},
		{Type: corev1.EventTypeWarning, Reason: ReasonDeadlineExceeded, Action: "Fail", Message: "Job exceeded its activeDeadlineSeconds (10s): 1 of 1 nodes failed"},
	}
	if diff := cmp.Diff(want, d.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestDecideSilentNodeEvent(t *testing.T) {
	d := Decide(Input{Now: at(100), Job: pullJob(1, started), Image: "nginx", Tag: "1.27",
		Selected: []*kruiseappsv1alpha1.NodeImage{asked(0, tagged("a", mine, "", 0, ""))}, Existing: map[string]bool{"a": true}})
	want := []Event{
		{Type: corev1.EventTypeWarning, Reason: ReasonNoNodeAgent, Action: "Node a",
			Message: "Node a did not report nginx:1.27 within 1m0s: its agent is not responding, counted as failed"},
		{Type: corev1.EventTypeWarning, Reason: ReasonCompleted, Action: "Complete",
			Message: "Pulled nginx:1.27 on 0 of 1 nodes, 1 failed; 1 failed (a: " + MessageNoResponse + ")"},
	}
	if diff := cmp.Diff(want, d.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if want := "node has not responded for a long time: its agent did not report the image within 1m0s"; MessageNoResponse != want {
		t.Errorf("MessageNoResponse = %q, want %q", MessageNoResponse, want)
	}
}

func TestFailureSummaryIsBounded(t *testing.T) {
	var fs []failure
	for _, n := range []string{"e", "d", "c", "b", "a"} {
		fs = append(fs, failure{n, "x"})
	}
	if got, want := failureSummary(fs), "; 5 failed (a: x; b: x; c: x; and 2 more)"; got != want {
		t.Errorf("failureSummary = %q, want %q", got, want)
	}
	long := []failure{{"a", "pulling image r/x:1: rpc error: " + strings.Repeat("resolving: ", 40) + "401 Unauthorized"}}
	if got := failureSummary(long); len(got) > 250 || !strings.HasSuffix(got, "401 Unauthorized)") || !strings.Contains(got, "a: …") {
		t.Errorf("a long message keeps its end: %q", got)
	}
}

func TestAfterFinish(t *testing.T) {
	ttl := func(s int32) kruiseappsv1alpha1.CompletionPolicy {
		return kruiseappsv1alpha1.CompletionPolicy{TTLSecondsAfterFinished: ptr.To(s)}
	}
	for _, tc := range []struct {
		name string
		cp   kruiseappsv1alpha1.CompletionPolicy
		done int
		del  bool
		wake time.Duration
	}{
		{"no TTL keeps the job", kruiseappsv1alpha1.CompletionPolicy{}, 0, false, 0},
		{"TTL ahead", ttl(30), 0, false, 10 * time.Second},
		{"TTL passed", ttl(10), 0, true, 0},
		{"TTL 0 deletes at once", ttl(0), 20, true, 0},
	} {
		del, wake := AfterFinish(tc.cp, mtime(tc.done), at(20))
		if del != tc.del || wake != tc.wake {
			t.Errorf("%s: AfterFinish = %v, %v; want %v, %v", tc.name, del, wake, tc.del, tc.wake)
		}
	}
}

func TestParallelism(t *testing.T) {
	for _, tc := range []struct {
		p    *intstr.IntOrString
		want int
	}{
		{nil, 1}, {ptr.To(intstr.FromInt32(5)), 5}, {ptr.To(intstr.FromString("7")), 7}, {ptr.To(intstr.FromInt32(0)), 0},
		{ptr.To(intstr.FromInt32(-2)), 0}, {ptr.To(intstr.FromString("50%")), 1},
	} {
		j := pullJob(1)
		j.Spec.Parallelism = tc.p
		if got := Parallelism(j); got != tc.want {
			t.Errorf("Parallelism(%v) = %d, want %d", tc.p, got, tc.want)
		}
	}
}

func TestNewTagRequest(t *testing.T) {
	secrets := []kruiseappsv1alpha1.ReferenceObject{{Namespace: "cfg", Name: "copy"}}
	always := pullJob(1, started, deadline(60), func(j *kruiseappsv1alpha1.ImagePullJob) {
		j.Spec.PullPolicy = &kruiseappsv1alpha1.PullPolicy{BackoffLimit: ptr.To[int32](1)}
	})
	req := NewTagRequest(always, "nginx", "1.27", secrets, at(15))
	wantPolicy := &kruiseappsv1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](1), ActiveDeadlineSeconds: ptr.To[int64](45)}
	if diff := cmp.Diff(wantPolicy, req.PullPolicy); diff != "" || req.ImagePullPolicy != kruiseappsv1alpha1.PullIfNotPresent ||
		req.Owner.UID != jobUID || req.Owner.Kind != "ImagePullJob" || !req.CreatedAt.Time.Equal(at(15)) {
		t.Errorf("Always: %+v, pull policy (-want +got):\n%s", req, diff)
	}
	req = NewTagRequest(pullJob(1, never), "nginx", "1.27", nil, at(15))
	wantPolicy = &kruiseappsv1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3),
		TTLSecondsAfterFinished: ptr.To(NeverTTLSeconds), ActiveDeadlineSeconds: ptr.To(NeverActiveDeadlineSeconds)}
	if diff := cmp.Diff(wantPolicy, req.PullPolicy); diff != "" {
		t.Errorf("Never: pull policy (-want +got):\n%s", diff)
	}
}
