package bench

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// threePods is a run of 3 pods: created at 100-300 ms, Ready at
// 1000-1500 ms, the status at 1600 ms.
func threePods() workloadRun {
	return workloadRun{
		Start:    at(0),
		Started:  []mark{{1, at(100)}, {2, at(200)}, {3, at(300)}},
		Finished: []mark{{1, at(1000)}, {2, at(1200)}, {3, at(1500)}},
		Done:     at(1600),
	}
}

func TestAnalyseRun(t *testing.T) {
	got, err := analyseRun(threePods(), 3)
	if err != nil {
		t.Fatal(err)
	}
	want := runFigures{Total: 1600 * time.Millisecond, AllStarted: 300 * time.Millisecond,
		AllFinished: 1500 * time.Millisecond, StatusLag: 100 * time.Millisecond}
	if got != want {
		t.Errorf("figures %+v, want %+v", got, want)
	}
}

func TestAnalyseRunMissing(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*workloadRun)
		want string
	}{
		"too few started": {func(r *workloadRun) { r.Started = r.Started[:2] }, "2 pods seen started, want 3"},
		"none Ready":      {func(r *workloadRun) { r.Finished = nil }, "0 pods seen Ready, want 3"},
		"no status":       {func(r *workloadRun) { r.Done = time.Time{} }, "status never showed"},
	} {
		t.Run(name, func(t *testing.T) {
			r := threePods()
			tc.edit(&r)
			if _, err := analyseRun(r, 3); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMeanFigures(t *testing.T) {
	got := meanFigures([]runFigures{
		{Total: 10 * time.Second, AllStarted: 2 * time.Second, AllFinished: 9 * time.Second, StatusLag: time.Second},
		{Total: 20 * time.Second, AllStarted: 4 * time.Second, AllFinished: 19 * time.Second, StatusLag: 3 * time.Second},
	})
	want := runFigures{Total: 15 * time.Second, AllStarted: 3 * time.Second, AllFinished: 14 * time.Second, StatusLag: 2 * time.Second}
	if got != want {
		t.Errorf("mean %+v, want %+v", got, want)
	}
	if got := meanFigures(nil); got != (runFigures{}) {
		t.Errorf("mean of none %+v", got)
	}
}

func phase(wall time.Duration, creates, gets int64, rss uint64, cpu float64) Phase {
	return Phase{
		Wall: wall, ManagerRunning: true,
		Requests: []RequestCount{{"create", "pods", creates}, {"get", "pods", gets}},
		Usage: map[string]Usage{ManagerName: {PID: 7, PeakRSSBytes: rss, CPUSeconds: cpu, WallSeconds: wall.Seconds(),
			Cores: cpu / wall.Seconds()}},
	}
}

func TestSumPhases(t *testing.T) {
	got := sumPhases([]Phase{phase(10*time.Second, 1000, 2, 80<<20, 3), phase(30*time.Second, 1000, 0, 90<<20, 5)})
	want := Phase{
		Wall: 40 * time.Second, ManagerRunning: true,
		Requests: []RequestCount{{"create", "pods", 2000}, {"get", "pods", 2}},
		Usage:    map[string]Usage{ManagerName: {PID: 7, PeakRSSBytes: 90 << 20, CPUSeconds: 8, WallSeconds: 40, Cores: 0.2}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sum (-want +got):\n%s", diff)
	}
	idle := phase(time.Second, 0, 0, 0, 0)
	idle.ManagerRunning = false
	if sumPhases([]Phase{phase(time.Second, 1, 0, 0, 0), idle}).ManagerRunning || sumPhases(nil).ManagerRunning {
		t.Error("a sum is measured with the manager only when every phase was")
	}
}

func TestCompareScale(t *testing.T) {
	run := func(kind string, total time.Duration, creates int64) scaleRun {
		return scaleRun{Kind: kind, Figures: runFigures{Total: total}, Phase: phase(total, creates, 0, 50<<20, 1)}
	}
	c, err := compareScale([]scaleRun{
		run(kindReplicaSet, 10*time.Second, 0), run(kindCloneSet, 12*time.Second, 1000), run(kindGatedReplicaSet, 15*time.Second, 0),
		run(kindCloneSet, 14*time.Second, 1000), run(kindReplicaSet, 12*time.Second, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.CloneSet.Total != 13*time.Second || c.ReplicaSet.Total != 11*time.Second || c.CloneSetRuns != 2 || c.ReplicaSetRuns != 2 {
		t.Errorf("comparison %+v", c)
	}
	if c.Gated.Total != 15*time.Second || c.GatedRuns != 1 {
		t.Errorf("gated baseline %+v over %d runs, want 15 s over 1", c.Gated, c.GatedRuns)
	}
	if writes(c.CloneSetPhase.Requests) != 2000 || writes(c.ReplicaSetPhase.Requests) != 0 || c.CloneSetPhase.Wall != 26*time.Second {
		t.Errorf("phases %+v / %+v", c.CloneSetPhase, c.ReplicaSetPhase)
	}
	if want := "ReplicaSet 10.0 s, CloneSet 12.0 s, GatedReplicaSet 15.0 s, CloneSet 14.0 s, ReplicaSet 12.0 s"; c.Order != want {
		t.Errorf("order %q, want %q", c.Order, want)
	}
	if _, err := compareScale([]scaleRun{run(kindCloneSet, time.Second, 1)}); err == nil {
		t.Error("a comparison without a ReplicaSet run must fail")
	}
}

func TestScaleMetricsTargets(t *testing.T) {
	for name, tc := range map[string]struct {
		cloneSet time.Duration
		met      bool
	}{
		"within 1.1x": {10900 * time.Millisecond, true},
		"beyond 1.1x": {11100 * time.Millisecond, false},
	} {
		t.Run(name, func(t *testing.T) {
			var res Result
			addScaleMetrics(&res, scaleComparison{
				CloneSet: runFigures{Total: tc.cloneSet}, ReplicaSet: runFigures{Total: 8 * time.Second},
				Gated: runFigures{Total: 10 * time.Second}, GatedRuns: 1,
				CloneSetPhase: phase(tc.cloneSet, 2000, 0, 60<<20, 2), CloneSetRuns: 2, ReplicaSetRuns: 2,
			})
			res.finish()
			m := metricNamed(t, res, "CloneSet against the gated ReplicaSet")
			if m.Met == nil || *m.Met != tc.met {
				t.Errorf("met %v, want %v", m.Met, tc.met)
			}
			if m := metricNamed(t, res, "CloneSet 0 -> 1000 Ready"); m.Met != nil || m.Ratio == nil || *m.Ratio < 1.36 {
				t.Errorf("against the plain ReplicaSet: met %v ratio %v, want a reported ratio above 1.36 and no target", m.Met, m.Ratio)
			}
			if got := metricNamed(t, res, "manager writes per pod").Value; got != 1 {
				t.Errorf("writes per pod %v, want 1 (2000 creates for 2 runs of 1000)", got)
			}
		})
	}
}

func TestUpdateMetricsTargets(t *testing.T) {
	run := func(patches int64, rss uint64) updateRun {
		return updateRun{Phase: Phase{ManagerRunning: true,
			Requests: []RequestCount{{"patch", "pods", patches}, {"patch", "pods/status", 2000}, {"list", "pods", 1}},
			Usage:    map[string]Usage{ManagerName: {PeakRSSBytes: rss}}}}
	}
	var res Result
	addUpdateMetrics(&res, run(1000, 140<<20), run(0, 200<<20))
	res.finish()
	for name, want := range map[string]bool{
		"manager writes per pod (in-place)": true,  // 3000 writes for 1000 pods
		"manager peak RSS (in-place)":       true,  // 140 MiB
		"manager writes per pod (ReCreate)": false, // no target
	} {
		m := metricNamed(t, res, name)
		if got := m.Met != nil && *m.Met; got != want || (m.Target == nil) == want {
			t.Errorf("%s: met %v, target %v; want met %v", name, m.Met, m.Target, want)
		}
	}
	if note := metricNamed(t, res, "manager writes per pod (in-place)").Note; note != "patch pods/status 2.00, patch pods 1.00" {
		t.Errorf("breakdown %q", note)
	}
}

func metricNamed(t *testing.T, res Result, name string) Metric {
	t.Helper()
	for _, m := range res.Metrics {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no metric %q", name)
	return Metric{}
}

func TestPerPodWrites(t *testing.T) {
	requests := []RequestCount{
		{"list", "pods", 5}, {"create", "events", 1000}, {"patch", "pods", 2000}, {"update", "clonesets/status", 25},
	}
	if got, want := perPodWrites(requests, 1000), "patch pods 2.00, create events 1.00, update clonesets/status 0.03"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := perPodWrites(requests, 0); got != "" {
		t.Errorf("no pods: %q", got)
	}
}

func containerPod(uid, image string, restarts int32, ready bool) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
		Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: image, RestartCount: restarts}}},
	}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

func TestCountReplacement(t *testing.T) {
	before := uidsOf([]corev1.Pod{containerPod("a", benchImage, 0, true), containerPod("b", benchImage, 0, true),
		containerPod("c", benchImage, 0, true)})
	after := []corev1.Pod{
		containerPod("a", inPlaceImage, 1, true), // in place
		containerPod("b", inPlaceImage, 2, true), // restarted twice
		containerPod("c", benchImage, 0, true),   // not updated
		containerPod("d", inPlaceImage, 0, true), // recreated
	}
	want := replacement{Pods: 4, Kept: 3, InPlace: 1, OnImage: 3}
	if got := countReplacement(after, before); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestCheckReplacement(t *testing.T) {
	inPlace := kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	recreate := kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType
	n := clonesetReplicas
	for name, tc := range map[string]struct {
		run updateRun
		ok  bool
	}{
		"all in place":       {updateRun{Strategy: inPlace, Pods: replacement{Pods: n, Kept: n, InPlace: n, OnImage: n}}, true},
		"one recreated":      {updateRun{Strategy: inPlace, Pods: replacement{Pods: n, Kept: n - 1, InPlace: n - 1, OnImage: n}}, false},
		"all new":            {updateRun{Strategy: recreate, Pods: replacement{Pods: n, OnImage: n}}, true},
		"recreate kept some": {updateRun{Strategy: recreate, Pods: replacement{Pods: n, Kept: 1, OnImage: n}}, false},
	} {
		if err := checkReplacement(tc.run); (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok %v", name, err, tc.ok)
		}
	}
}

func TestPodProgress(t *testing.T) {
	p := newPodProgress(specNewImage, readyOnNewImage)
	p.old[types.UID("old")] = true
	events := []corev1.Pod{
		containerPod("old", inPlaceImage, 1, true),
		containerPod("a", benchImage, 0, true),
		updatedSpec(containerPod("a", benchImage, 0, false)), // patched, not restarted
		containerPod("a", inPlaceImage, 1, false),            // restarted, not Ready
		containerPod("a", inPlaceImage, 1, true),
		containerPod("a", inPlaceImage, 1, true), // a repeated event counts once
		containerPod("b", inPlaceImage, 0, true),
	}
	for i := range events {
		p.observe(at(i*10), &events[i])
	}
	if diff := cmp.Diff([]mark{{1, at(20)}, {2, at(60)}}, p.starts.all()); diff != "" {
		t.Errorf("started (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]mark{{1, at(40)}, {2, at(60)}}, p.finishes.all()); diff != "" {
		t.Errorf("finished (-want +got):\n%s", diff)
	}
}

func updatedSpec(p corev1.Pod) corev1.Pod {
	p.Spec.Containers[0].Image = inPlaceImage
	return p
}

func TestWorkloadPredicates(t *testing.T) {
	cs := func(gen, observed int64, replicas, ready, available, updatedReady int32) *kruiseappsv1alpha1.CloneSet {
		return &kruiseappsv1alpha1.CloneSet{
			ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Spec:       kruiseappsv1alpha1.CloneSetSpec{Replicas: ptr.To[int32](3)},
			Status: kruiseappsv1alpha1.CloneSetStatus{ObservedGeneration: observed, Replicas: replicas,
				ReadyReplicas: ready, AvailableReplicas: available, UpdatedReadyReplicas: updatedReady},
		}
	}
	for name, tc := range map[string]struct {
		cs              *kruiseappsv1alpha1.CloneSet
		scaled, updated bool
	}{
		"all Ready and updated":  {cs(2, 2, 3, 3, 3, 3), true, true},
		"old generation":         {cs(3, 2, 3, 3, 3, 3), false, false},
		"one not available":      {cs(2, 2, 3, 3, 2, 3), false, true},
		"Ready, not all updated": {cs(2, 2, 3, 3, 3, 2), true, false},
	} {
		if got := cloneSetScaled(tc.cs); got != tc.scaled {
			t.Errorf("%s: scaled %v, want %v", name, got, tc.scaled)
		}
		if got := cloneSetUpdated(tc.cs); got != tc.updated {
			t.Errorf("%s: updated %v, want %v", name, got, tc.updated)
		}
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0)},
		Status: appsv1.ReplicaSetStatus{ObservedGeneration: 2}}
	if !replicaSetScaled(rs) {
		t.Error("an observed ReplicaSet of 0 replicas is scaled")
	}
	rs.Spec.Replicas = ptr.To[int32](2)
	rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: 2, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 1}
	if replicaSetScaled(rs) {
		t.Error("a ReplicaSet with a pod not available is not scaled")
	}
}

func TestImageChangeReplacesTheImageOnly(t *testing.T) {
	var ops []struct{ Op, Path, Value string }
	if err := json.Unmarshal(imageChange, &ops); err != nil {
		t.Fatal(err)
	}
	want := []struct{ Op, Path, Value string }{{"replace", "/spec/template/spec/containers/0/image", inPlaceImage}}
	if diff := cmp.Diff(want, ops); diff != "" || inPlaceImage == benchImage {
		t.Errorf("change (-want +got):\n%s", diff)
	}
}

func TestCloneSetClustersHoldTheirPods(t *testing.T) {
	for _, s := range []Scenario{cloneSetScale(), cloneSetInPlace()} {
		size := clusterSize(s)
		// One workload at a time; ReCreate surges by nothing (maxSurge 0).
		if size.Nodes*size.PodsPerNode < clonesetReplicas || !size.ControllerManager || !size.Scheduler {
			t.Errorf("%s: cluster %+v cannot hold %d pods", s.Name, size, clonesetReplicas)
		}
	}
	if !slices.Equal(scaleOrder, []string{kindGatedReplicaSet, kindCloneSet, kindReplicaSet, kindCloneSet, kindGatedReplicaSet}) {
		t.Errorf("scale order %v is not C B A B C", scaleOrder)
	}
}

func TestCounterRises(t *testing.T) {
	reconciles := func(result string, v float64) Sample {
		return Sample{Name: reconcileTotal, Labels: map[string]string{"controller": "cloneset-controller", "result": result}, Value: v}
	}
	conflicts := func(code string, v float64) Sample {
		return Sample{Name: "rest_client_requests_total", Labels: map[string]string{"code": code, "method": "PATCH"}, Value: v}
	}
	before := []Sample{reconciles("success", 10), reconciles("requeue_after", 1), conflicts("409", 2), conflicts("200", 50)}
	after := []Sample{reconciles("success", 30), reconciles("requeue_after", 6), reconciles("error", 1), conflicts("409", 7),
		conflicts("429", 3), conflicts("200", 500),
		{Name: reconcileTotal, Labels: map[string]string{"controller": "pod-readiness-controller"}, Value: 1000}}
	got := counterRises(cloneSetCounters, before, after)
	// conflicts, rejections (a series absent before counts from 0), CloneSet reconciles, of them requeued after
	// a delay, failed; pod-readiness reconciles.
	want := []float64{5, 3, 26, 5, 1, 1000}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rises (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{10, 6, 52, 10, 2, 2000}, addRises(addRises(nil, got), got)); diff != "" {
		t.Errorf("sum of two runs (-want +got):\n%s", diff)
	}
	metrics := counterMetrics(cloneSetCounters, got, " (in-place)", "")
	if len(metrics) != len(cloneSetCounters) || metrics[0].Name != "manager write conflicts (HTTP 409) (in-place)" || metrics[0].Value != 5 {
		t.Errorf("metrics %+v", metrics)
	}
}
