package bench

import (
	"slices"
	"strings"
	"testing"
	"time"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestImagePullJobRunFigures(t *testing.T) {
	r := ipjRun{Name: "waves", Parallelism: 10, Nodes: 205, Pull: 500 * time.Millisecond, Completed: 12600 * time.Millisecond,
		Released: 13 * time.Second, AllTagged: 12 * time.Second, AllSucceeded: 12400 * time.Millisecond, Desired: 205, Succeeded: 205,
		Phase: Phase{ManagerRunning: true, Requests: []RequestCount{
			{Verb: "update", Resource: "nodeimages", Count: 410}, {Verb: "patch", Resource: "imagepulljobs/status", Count: 41},
			{Verb: "get", Resource: "secrets", Count: 500}}},
		AgentWrites: []RequestCount{{Verb: "patch", Resource: "nodeimages/status", Count: 615}, {Verb: "create", Resource: "events", Count: 205}},
		Counters:    []float64{1, 2, 0, 30, 40}}
	if got := r.rounds(); got != 21 {
		t.Errorf("rounds %d, want 21", got)
	}
	if got := r.floor(); got != 10500*time.Millisecond {
		t.Errorf("floor %v, want 10.5s", got)
	}
	if got := r.overheadPerRound(); got != 100*time.Millisecond {
		t.Errorf("overhead per round %v, want 100ms", got)
	}
	if err := checkImagePullJobRun(r); err != nil {
		t.Errorf("check: %v", err)
	}
	metrics := imagePullJobMetrics(r)
	if len(metrics) != 8+len(imagePullJobCounters) {
		t.Fatalf("%d metrics, want %d", len(metrics), 8+len(imagePullJobCounters))
	}
	want := map[string]float64{
		"ImagePullJob over 205 nodes (parallelism 10): created -> completed": 12.6,
		"time per round beyond the pull (parallelism 10)":                    0.1,
		"created -> tags taken back (parallelism 10)":                        13,
		"manager writes per node (parallelism 10)":                           451.0 / 205,
		"simulated agents' writes per node (parallelism 10)":                 4,
		"ImagePullJob reconciles (parallelism 10)":                           30,
	}
	for _, m := range metrics {
		if v, ok := want[m.Name]; ok {
			if diff := m.Value - v; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("%s = %v, want %v", m.Name, m.Value, v)
			}
			delete(want, m.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing metrics %v", want)
	}
	if note := metrics[6].Note; !strings.Contains(note, "update nodeimages 2.00") || strings.Contains(note, "secrets") {
		t.Errorf("manager writes note %q: want the writes per node and no reads", note)
	}
}

func TestCheckImagePullJobRunFailsShortRuns(t *testing.T) {
	for _, r := range []ipjRun{
		{Nodes: 200, Desired: 200, Succeeded: 199, Failed: 1},
		{Nodes: 200, Desired: 150, Succeeded: 150},
	} {
		if err := checkImagePullJobRun(r); err == nil {
			t.Errorf("%+v passed the check", r)
		}
	}
}

func TestImagePullJobRoundsAllAtOnce(t *testing.T) {
	r := ipjRun{Parallelism: 200, Nodes: 200, Pull: time.Second, Completed: 3 * time.Second}
	if r.rounds() != 1 || r.overheadPerRound() != 2*time.Second {
		t.Errorf("rounds %d, overhead %v; want 1, 2s", r.rounds(), r.overheadPerRound())
	}
	if (ipjRun{Nodes: 200}).rounds() != 0 || (ipjRun{Nodes: 200}).overheadPerRound() != 0 {
		t.Error("parallelism 0 makes rounds")
	}
}

func TestPullComparison(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	c, err := comparePulls(map[string][]time.Duration{wayAgent: ms(300, 260, 900, 280, 270), wayCtr: ms(250, 240, 260, 245, 255)})
	if err != nil {
		t.Fatal(err)
	}
	m := pullMetrics(c)[0].checked()
	if m.Value != 0.28 || *m.Baseline != 0.25 {
		t.Errorf("medians %v against %v, want 0.28 against 0.25", m.Value, *m.Baseline)
	}
	if *m.Ratio < 1.119 || *m.Ratio > 1.121 || m.Met == nil || *m.Met {
		t.Errorf("ratio %v met %v: want 1.12, missed against %v", *m.Ratio, m.Met, pullRatioTarget)
	}
	if !strings.Contains(m.Note, "agent 260-900 ms, ctr 240-260 ms") {
		t.Errorf("note %q lacks the ranges", m.Note)
	}
	if _, err := comparePulls(map[string][]time.Duration{wayAgent: ms(1)}); err == nil {
		t.Error("no ctr pulls, no error")
	}
}

func TestPullOrder(t *testing.T) {
	got := pullOrder(3)
	want := []string{wayAgent, wayCtr, wayCtr, wayAgent, wayAgent, wayCtr, wayCtr, wayAgent}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// agentStatusFixture is one tag of a NodeImage's spec and the times of its pull.
func agentStatusFixture() (image string, spec kruiseappsv1alpha1.NodeImageSpec, k pullKey, start, done time.Time) {
	image = "registry.bench.test/bench/app"
	spec = kruiseappsv1alpha1.NodeImageSpec{Images: map[string]kruiseappsv1alpha1.ImageSpec{
		image: {Tags: []kruiseappsv1alpha1.ImageTagSpec{{Tag: "v1", Version: 2}}}}}
	start = time.Date(2026, 12, 5, 10, 0, 0, 300e6, time.UTC)
	return image, spec, pullKey{Image: image, Tag: "v1"}, start, start.Add(1500 * time.Millisecond)
}

// TestAgentStatusPulling checks the simulated agent's status against what the agent's image puller writes
// when a pull starts: the tag Pulling since the start, to the second.
func TestAgentStatusPulling(t *testing.T) {
	image, spec, k, start, _ := agentStatusFixture()
	pulling := agentStatus(spec, map[pullKey]simTask{k: {Version: 2, Phase: kruiseappsv1alpha1.ImagePhasePulling, Start: start}},
		kruiseappsv1alpha1.NodeImageStatus{}, start)
	if pulling.Desired != 1 || pulling.Pulling != 1 || pulling.Succeeded != 0 || pulling.FirstSyncStatus != nil {
		t.Errorf("counters %+v", pulling)
	}
	tag := pulling.ImageStatuses[image].Tags[0]
	if tag.Phase != kruiseappsv1alpha1.ImagePhasePulling || tag.Version != 2 || tag.Progress != 0 || tag.CompletionTime != nil ||
		!tag.StartTime.Time.Equal(start.Truncate(time.Second)) {
		t.Errorf("tag %+v", tag)
	}
}

// TestAgentStatusSucceeded: the tag Succeeded with its image ID and firstSyncStatus, then gone with the tag
// taken out of the spec while firstSyncStatus stays.
func TestAgentStatusSucceeded(t *testing.T) {
	image, spec, k, start, done := agentStatusFixture()
	succeeded := agentStatus(spec, map[pullKey]simTask{k: {Version: 2, Phase: kruiseappsv1alpha1.ImagePhaseSucceeded, Start: start,
		Completion: done, ImageID: image + "@sha256:abc"}}, kruiseappsv1alpha1.NodeImageStatus{}, done)
	tag := succeeded.ImageStatuses[image].Tags[0]
	if succeeded.Succeeded != 1 || succeeded.Pulling != 0 || tag.Progress != 100 || tag.ImageID != image+"@sha256:abc" ||
		!tag.CompletionTime.Time.Equal(done.Truncate(time.Second)) {
		t.Errorf("status %+v, tag %+v", succeeded, tag)
	}
	if s := succeeded.FirstSyncStatus; s == nil || s.Status != kruiseappsv1alpha1.SyncStatusSucceeded || !s.SyncAt.Time.Equal(done.Truncate(time.Second)) {
		t.Errorf("firstSyncStatus %+v", succeeded.FirstSyncStatus)
	}
	released := agentStatus(kruiseappsv1alpha1.NodeImageSpec{}, map[pullKey]simTask{}, succeeded, done.Add(time.Hour))
	if released.ImageStatuses != nil || released.Desired != 0 || released.FirstSyncStatus != succeeded.FirstSyncStatus {
		t.Errorf("released: %+v", released)
	}
}

func TestOlderThan(t *testing.T) {
	if !olderThan("99", "100") || olderThan("100", "100") || olderThan("101", "100") || olderThan("x", "100") {
		t.Error("olderThan compares resource versions wrong")
	}
}

func TestAllSucceeded(t *testing.T) {
	image := "registry.bench.test/bench/app"
	ni := &kruiseappsv1alpha1.NodeImage{Spec: kruiseappsv1alpha1.NodeImageSpec{Images: map[string]kruiseappsv1alpha1.ImageSpec{
		image: {Tags: []kruiseappsv1alpha1.ImageTagSpec{{Tag: "v1", Version: 2}}}}}}
	status := func(version int64, phase kruiseappsv1alpha1.ImagePullPhase) kruiseappsv1alpha1.NodeImageStatus {
		return kruiseappsv1alpha1.NodeImageStatus{ImageStatuses: map[string]kruiseappsv1alpha1.ImageStatus{
			image: {Tags: []kruiseappsv1alpha1.ImageTagStatus{{Tag: "v1", Version: version, Phase: phase}}}}}
	}
	for _, tt := range []struct {
		status kruiseappsv1alpha1.NodeImageStatus
		want   bool
	}{
		{kruiseappsv1alpha1.NodeImageStatus{}, false},
		{status(2, kruiseappsv1alpha1.ImagePhasePulling), false},
		{status(1, kruiseappsv1alpha1.ImagePhaseSucceeded), false}, // a former version's result
		{status(2, kruiseappsv1alpha1.ImagePhaseSucceeded), true},
	} {
		ni.Status = tt.status
		if got := allSucceeded(ni); got != tt.want {
			t.Errorf("allSucceeded with %+v = %v, want %v", tt.status, got, tt.want)
		}
	}
	if allSucceeded(&kruiseappsv1alpha1.NodeImage{}) {
		t.Error("a NodeImage without tags counts as Succeeded")
	}
}
