package imagepuller

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func mt(s int) *metav1.Time { return ptr.To(metav1.NewTime(at(s))) }

var (
	nginx = Key{Image: "nginx", Tag: "1.25"}
	redis = Key{Image: "redis", Tag: "7"}
)

// spec builds a NodeImage spec of tags, one image per key, all with policy pp.
func spec(pp *kruiseappsv1alpha1.ImageTagPullPolicy, keys ...Key) kruiseappsv1alpha1.NodeImageSpec {
	s := kruiseappsv1alpha1.NodeImageSpec{Images: map[string]kruiseappsv1alpha1.ImageSpec{}}
	for _, k := range keys {
		img := s.Images[k.Image]
		img.Tags = append(img.Tags, kruiseappsv1alpha1.ImageTagSpec{Tag: k.Tag, PullPolicy: pp})
		s.Images[k.Image] = img
	}
	return s
}

func keysOf(starts []Start) []Key {
	var out []Key
	for _, s := range starts {
		out = append(out, s.Key)
	}
	return out
}

func pulling(attempt int32, start, attemptStart int, timeout time.Duration) Task {
	return Task{Phase: kruiseappsv1alpha1.ImagePhasePulling, StartTime: at(start), Attempt: attempt, Running: true,
		AttemptStart: at(attemptStart), AttemptTimeout: timeout}
}

func TestCompute(t *testing.T) {
	short := &kruiseappsv1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](10), ActiveDeadlineSeconds: ptr.To[int64](25)}
	for _, tc := range []struct {
		name         string
		in           Input
		start        []Key
		cancel       []Key
		failed       []Key
		tasks        map[Key]Task
		requeueAfter time.Duration
	}{{
		name:  "new tags start, bounded by MaxRunning, in name order",
		in:    Input{Spec: spec(nil, redis, nginx), Now: at(0), MaxRunning: 1},
		start: []Key{nginx},
		tasks: map[Key]Task{nginx: pulling(1, 0, 0, DefaultTimeout), redis: {Phase: kruiseappsv1alpha1.ImagePhaseWaiting}},
		// The waiting tag starts when the running one finishes, not with time.
		requeueAfter: DefaultTimeout,
	}, {
		name:         "no bound starts every tag",
		in:           Input{Spec: spec(nil, redis, nginx), Now: at(0)},
		start:        []Key{nginx, redis},
		tasks:        map[Key]Task{nginx: pulling(1, 0, 0, DefaultTimeout), redis: pulling(1, 0, 0, DefaultTimeout)},
		requeueAfter: DefaultTimeout,
	}, {
		name: "a finished task of the spec's version in the status is not pulled again",
		in: Input{Spec: spec(nil, nginx), Now: at(100), Status: kruiseappsv1alpha1.NodeImageStatus{ImageStatuses: map[string]kruiseappsv1alpha1.ImageStatus{
			"nginx": {Tags: []kruiseappsv1alpha1.ImageTagStatus{{Tag: "1.25", Phase: kruiseappsv1alpha1.ImagePhaseSucceeded,
				StartTime: mt(1), CompletionTime: mt(2), Progress: 100, ImageID: "nginx@sha256:1"}}}}}},
		tasks: map[Key]Task{nginx: {Phase: kruiseappsv1alpha1.ImagePhaseSucceeded, StartTime: at(1), CompletionTime: at(2),
			Progress: 100, ImageID: "nginx@sha256:1"}},
	}, {
		name:         "an unfinished task in the status is pulled again",
		in:           Input{Spec: spec(nil, nginx), Now: at(100), Status: statusOf(nginx, kruiseappsv1alpha1.ImagePhasePulling, 0)},
		start:        []Key{nginx},
		tasks:        map[Key]Task{nginx: pulling(1, 100, 100, DefaultTimeout)},
		requeueAfter: DefaultTimeout,
	}, {
		name:   "a tag gone from the spec is cancelled and forgotten",
		in:     Input{Spec: spec(nil), Now: at(5), Tasks: map[Key]Task{nginx: pulling(1, 0, 0, DefaultTimeout)}},
		cancel: []Key{nginx},
		tasks:  map[Key]Task{},
	}, {
		name: "a new version restarts the task",
		in: Input{Spec: versioned(spec(nil, nginx), 2), Now: at(5),
			Tasks: map[Key]Task{nginx: pulling(1, 0, 0, DefaultTimeout)}},
		cancel:       []Key{nginx},
		start:        []Key{nginx},
		tasks:        map[Key]Task{nginx: withVersion(pulling(1, 5, 5, DefaultTimeout), 2)},
		requeueAfter: DefaultTimeout,
	}, {
		name:         "the attempt timeout is cut to the deadline",
		in:           Input{Spec: spec(short, nginx), Now: at(20), Tasks: map[Key]Task{nginx: backingOff(pulling(2, 0, 5, 10*time.Second), 20)}},
		start:        []Key{nginx},
		tasks:        map[Key]Task{nginx: retried(pulling(3, 0, 20, 5*time.Second), 20)},
		requeueAfter: 5 * time.Second,
	}, {
		name:   "an attempt past its timeout is cancelled and backs off",
		in:     Input{Spec: spec(short, nginx), Now: at(10), Tasks: map[Key]Task{nginx: pulling(1, 0, 0, 10*time.Second)}},
		cancel: []Key{nginx},
		tasks: map[Key]Task{nginx: {Phase: kruiseappsv1alpha1.ImagePhasePulling, StartTime: at(0), Attempt: 1, AttemptStart: at(0),
			AttemptTimeout: 10 * time.Second, NextAttempt: at(11), Reason: ReasonTimeout,
			Message: "pulling image nginx:1.25 timed out after 10s"}},
		requeueAfter: time.Second,
	}, {
		name:   "the task fails at its deadline",
		in:     Input{Spec: spec(short, nginx), Now: at(25), Tasks: map[Key]Task{nginx: pulling(3, 0, 20, 5*time.Second)}},
		cancel: []Key{nginx},
		failed: []Key{nginx},
		tasks: map[Key]Task{nginx: {Phase: kruiseappsv1alpha1.ImagePhaseFailed, StartTime: at(0), CompletionTime: at(25), Attempt: 3,
			AttemptStart: at(20), AttemptTimeout: 5 * time.Second, Message: MessageDeadlineExceeded, Reason: ReasonDeadline}},
	}, {
		name:         "a task in backoff waits",
		in:           Input{Spec: spec(nil, nginx), Now: at(3), Tasks: map[Key]Task{nginx: backingOff(pulling(2, 0, 0, DefaultTimeout), 4)}},
		tasks:        map[Key]Task{nginx: backingOff(pulling(2, 0, 0, DefaultTimeout), 4)},
		requeueAfter: time.Second,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(tc.in)
			if diff := cmp.Diff(tc.start, keysOf(p.Start)); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.cancel, p.Cancel); diff != "" {
				t.Errorf("cancels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.failed, p.Failed); diff != "" {
				t.Errorf("failed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.tasks, p.Tasks); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
			if p.RequeueAfter != tc.requeueAfter {
				t.Errorf("RequeueAfter = %v, want %v", p.RequeueAfter, tc.requeueAfter)
			}
		})
	}
}

func versioned(s kruiseappsv1alpha1.NodeImageSpec, v int64) kruiseappsv1alpha1.NodeImageSpec {
	for name, img := range s.Images {
		for i := range img.Tags {
			img.Tags[i].Version = v
		}
		s.Images[name] = img
	}
	return s
}

func withVersion(t Task, v int64) Task { t.Version = v; return t }

func backingOff(t Task, next int) Task {
	t.Running, t.NextAttempt = false, at(next)
	return t
}

// retried is a running attempt that began after a backoff ending at next.
func retried(t Task, next int) Task {
	t.NextAttempt = at(next)
	return t
}

func statusOf(k Key, phase kruiseappsv1alpha1.ImagePullPhase, version int64) kruiseappsv1alpha1.NodeImageStatus {
	return kruiseappsv1alpha1.NodeImageStatus{ImageStatuses: map[string]kruiseappsv1alpha1.ImageStatus{
		k.Image: {Tags: []kruiseappsv1alpha1.ImageTagStatus{{Tag: k.Tag, Phase: phase, Version: version, StartTime: mt(0)}}}}}
}

func TestFinishRetriesUpToTheBackoffLimit(t *testing.T) {
	tag := kruiseappsv1alpha1.ImageTagSpec{Tag: "1.25", PullPolicy: &kruiseappsv1alpha1.ImageTagPullPolicy{BackoffLimit: ptr.To[int32](2)}}
	boom := Result{Err: errors.New("boom"), Reason: ReasonPullFailed}
	task := pulling(1, 0, 0, DefaultTimeout)
	var waits []time.Duration
	now := at(0)
	for {
		next, done := Finish(task, task.Attempt, boom, tag, now)
		if done {
			task = next
			break
		}
		waits = append(waits, next.NextAttempt.Sub(now))
		now = next.NextAttempt
		next.Attempt++
		next.Running, next.AttemptStart = true, now
		task = next
	}
	// Two retries after the first attempt, 1s then 2s apart; the third failure gives up.
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second}, waits); diff != "" {
		t.Errorf("backoffs (-want +got):\n%s", diff)
	}
	if task.Phase != kruiseappsv1alpha1.ImagePhaseFailed || task.Attempt != 3 || task.Message != "boom" || !task.CompletionTime.Equal(now) {
		t.Errorf("final task %+v", task)
	}
}

func TestFinish(t *testing.T) {
	tag := kruiseappsv1alpha1.ImageTagSpec{Tag: "1.25"}
	running := pulling(2, 0, 5, DefaultTimeout)
	got, done := Finish(running, 2, Result{ImageID: "nginx@sha256:1"}, tag, at(9))
	want := running
	want.Running, want.Phase, want.CompletionTime, want.Progress, want.ImageID = false, kruiseappsv1alpha1.ImagePhaseSucceeded, at(9), 100, "nginx@sha256:1"
	if !done || !cmp.Equal(want, got) {
		t.Errorf("success: done %v, %s", done, cmp.Diff(want, got))
	}
	if got, done := Finish(running, 1, Result{Err: errors.New("late")}, tag, at(9)); done || !cmp.Equal(running, got) {
		t.Errorf("the result of an earlier attempt changed the task: %+v", got)
	}
	if got := backoff(10); got != 30*time.Second {
		t.Errorf("backoff(10) = %v, want the 30s cap", got)
	}
	negative := kruiseappsv1alpha1.ImageTagSpec{PullPolicy: &kruiseappsv1alpha1.ImageTagPullPolicy{BackoffLimit: ptr.To[int32](-1)}}
	if got := backoffLimit(negative); got != DefaultBackoffLimit {
		t.Errorf("a negative backoffLimit reads as %d, want the default", got)
	}
}

func TestStatus(t *testing.T) {
	s := spec(nil, nginx, Key{Image: "nginx", Tag: "1.24"}, redis)
	tasks := map[Key]Task{
		nginx: {Phase: kruiseappsv1alpha1.ImagePhaseSucceeded, StartTime: at(0).Add(300 * time.Millisecond), CompletionTime: at(4),
			Progress: 100, ImageID: "nginx@sha256:1"},
		{Image: "nginx", Tag: "1.24"}: {Phase: kruiseappsv1alpha1.ImagePhaseWaiting},
		redis:                         {Phase: kruiseappsv1alpha1.ImagePhasePulling, StartTime: at(1)},
	}
	got := Status(s, tasks, kruiseappsv1alpha1.NodeImageStatus{}, at(5))
	want := kruiseappsv1alpha1.NodeImageStatus{Desired: 3, Succeeded: 1, Pulling: 1, ImageStatuses: map[string]kruiseappsv1alpha1.ImageStatus{
		"nginx": {Tags: []kruiseappsv1alpha1.ImageTagStatus{
			{Tag: "1.24", Phase: kruiseappsv1alpha1.ImagePhaseWaiting},
			{Tag: "1.25", Phase: kruiseappsv1alpha1.ImagePhaseSucceeded, Progress: 100, StartTime: mt(0), CompletionTime: mt(4), ImageID: "nginx@sha256:1"},
		}},
		"redis": {Tags: []kruiseappsv1alpha1.ImageTagStatus{{Tag: "7", Phase: kruiseappsv1alpha1.ImagePhasePulling, StartTime: mt(1)}}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func TestFirstSyncStatus(t *testing.T) {
	s := spec(nil, nginx, redis)
	done := func(phase kruiseappsv1alpha1.ImagePullPhase) Task { return Task{Phase: phase, CompletionTime: at(1)} }
	pullingTask := Task{Phase: kruiseappsv1alpha1.ImagePhasePulling}
	if got := Status(s, map[Key]Task{nginx: done(kruiseappsv1alpha1.ImagePhaseSucceeded), redis: pullingTask}, kruiseappsv1alpha1.NodeImageStatus{}, at(2)); got.FirstSyncStatus != nil {
		t.Errorf("set before every task finished: %+v", got.FirstSyncStatus)
	}
	if got := Status(kruiseappsv1alpha1.NodeImageSpec{}, nil, kruiseappsv1alpha1.NodeImageStatus{}, at(2)); got.FirstSyncStatus != nil {
		t.Errorf("set for a node with nothing to pull: %+v", got.FirstSyncStatus)
	}
	first := Status(s, map[Key]Task{nginx: done(kruiseappsv1alpha1.ImagePhaseSucceeded), redis: done(kruiseappsv1alpha1.ImagePhaseFailed)},
		kruiseappsv1alpha1.NodeImageStatus{}, at(2)).FirstSyncStatus
	want := &kruiseappsv1alpha1.SyncStatus{SyncAt: metav1.NewTime(at(2)), Status: kruiseappsv1alpha1.SyncStatusFailed, Message: "failed to pull [redis:7]"}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("first sync (-want +got):\n%s", diff)
	}
	// Once set it stays, whatever the tasks do next.
	later := Status(s, map[Key]Task{nginx: pullingTask}, kruiseappsv1alpha1.NodeImageStatus{FirstSyncStatus: first}, at(9))
	if diff := cmp.Diff(want, later.FirstSyncStatus); diff != "" {
		t.Errorf("kept first sync (-want +got):\n%s", diff)
	}
}

func TestKeyRef(t *testing.T) {
	for _, tc := range []struct {
		key  Key
		want string
	}{
		{Key{Image: "nginx", Tag: "1.27"}, "nginx:1.27"},
		{Key{Image: "127.0.0.1:5000/team/app", Tag: "v1"}, "127.0.0.1:5000/team/app:v1"},
		{Key{Image: "nginx", Tag: "sha256:0123abcd"}, "nginx@sha256:0123abcd"},
	} {
		if got := tc.key.Ref(); got != tc.want {
			t.Errorf("%+v.Ref() = %q, want %q", tc.key, got, tc.want)
		}
	}
}
