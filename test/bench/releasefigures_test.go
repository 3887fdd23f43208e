package bench

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func at(msec int) time.Time { return t0.Add(time.Duration(msec) * time.Millisecond) }

// patches is a request counter that has seen n pod patches and one
// status update per step.
func patches(pods, steps int) map[RequestKey]float64 {
	return map[RequestKey]float64{
		{Verb: "patch", Resource: "pods"}:                      float64(pods),
		{Verb: "update", Resource: "batchreleases/status"}:     float64(steps),
		{Verb: "list", Resource: "pods"}:                       1,
		{Verb: "watch", Resource: "replicasets"}:               float64(steps),
		{Verb: "patch", Resource: "customresourcedefinitions"}: 0,
	}
}

// twoSteps is a release of 10 pods in steps of 3 and 10.
func twoSteps() releaseTimeline {
	return releaseTimeline{
		Start:         at(0),
		StartRequests: patches(0, 0),
		Batches: []batchMark{
			{Updated: 0, At: at(100), Requests: patches(0, 1)},
			{Updated: 3, At: at(150), Requests: patches(0, 2)},
			{Updated: 10, At: at(2060), Requests: patches(3, 4)},
		},
		PodsReady:        []mark{{1, at(1000)}, {2, at(1500)}, {3, at(2000)}, {4, at(2500)}, {10, at(4000)}},
		PodsLabelled:     []mark{{3, at(1900)}, {10, at(4050)}},
		SetReady:         []mark{{2, at(1600)}, {3, at(2020)}},
		BatchReady:       []mark{{1, at(2030)}, {2, at(4100)}},
		BatchCompleted:   []mark{{1, at(4250)}},
		RolloutSteps:     []mark{{1, at(50)}, {2, at(2045)}},
		AllReadyRequests: patches(9, 5),
		Completed:        at(4300), EndRequests: patches(10, 7),
	}
}

func TestAnalyseRelease(t *testing.T) {
	fig, err := analyseRelease(twoSteps(), []int32{3, 10})
	if err != nil {
		t.Fatal(err)
	}
	want := releaseFigures{
		Total: 4300 * time.Millisecond, FirstBatch: 150 * time.Millisecond, Finalising: 300 * time.Millisecond,
		Steps: []stepFigures{
			{Target: 3, Pods: 3, Written: at(150), Ready: at(2000), Rolled: 1850 * time.Millisecond,
				Transition: 60 * time.Millisecond,
				Path: []hop{{"ReplicaSet status", at(2020), true}, {"pods labelled", at(1900), true}, {"batch done", at(2030), true},
					{"Rollout step 2", at(2045), true}, {"partition", at(2060), true}},
				Writes: []RequestCount{{"patch", "pods", 3}, {"update", "batchreleases/status", 2}}},
			{Target: 10, Pods: 7, Written: at(2060), Ready: at(4000), Rolled: 1940 * time.Millisecond,
				Path: []hop{{"ReplicaSet status", time.Time{}, false}, {"pods labelled", at(4050), true}, {"batch done", at(4100), true},
					{"BatchRelease Completed", at(4250), true}, {"Rollout Completed", at(4300), true}},
				Writes: []RequestCount{{"patch", "pods", 6}, {"update", "batchreleases/status", 1}}},
		},
		StartWrites:      []RequestCount{{"update", "batchreleases/status", 2}},
		FinalisingWrites: []RequestCount{{"patch", "pods", 1}, {"update", "batchreleases/status", 2}},
	}
	sortWrites := func(f *releaseFigures) {
		byResource := func(a, b RequestCount) int { return strings.Compare(a.Resource, b.Resource) }
		for i := range f.Steps {
			slices.SortFunc(f.Steps[i].Writes, byResource)
		}
		slices.SortFunc(f.FinalisingWrites, byResource)
	}
	sortWrites(&fig)
	sortWrites(&want)
	if diff := cmp.Diff(want, fig); diff != "" {
		t.Errorf("figures (-want +got):\n%s", diff)
	}
}

func TestAnalyseReleaseMissingMarks(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*releaseTimeline)
		want string
	}{
		"batch never written":     {func(tl *releaseTimeline) { tl.Batches = tl.Batches[:2] }, "no partition of 10 pods"},
		"too few pods Ready":      {func(tl *releaseTimeline) { tl.PodsReady = tl.PodsReady[:4] }, "4 new pods seen Ready, the batch needs 10"},
		"scrape missing":          {func(tl *releaseTimeline) { tl.Batches[2].Requests = nil }, "requests were not read"},
		"end scrape missing":      {func(tl *releaseTimeline) { tl.EndRequests = nil }, "requests were not read"},
		"last pod scrape missing": {func(tl *releaseTimeline) { tl.AllReadyRequests = nil }, "requests were not read"},
	} {
		t.Run(name, func(t *testing.T) {
			tl := twoSteps()
			tc.edit(&tl)
			if _, err := analyseRelease(tl, []int32{3, 10}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := analyseRelease(twoSteps(), nil); err == nil {
		t.Error("no steps must be an error")
	}
}

func TestReleaseMetricsTargets(t *testing.T) {
	fig, err := analyseRelease(twoSteps(), []int32{3, 10})
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	release := Phase{Usage: map[string]Usage{ManagerName: {PeakRSSBytes: 100 << 20}, ControllerManagerName: {PeakRSSBytes: 300 << 20}}}
	floors := []floorRun{{took: 3 * time.Second, tail: 100 * time.Millisecond}, {took: 5 * time.Second, tail: 300 * time.Millisecond}}
	addReleaseMetrics(&res, fig, floors, release, release1k)
	res.finish()
	met := map[string]bool{}
	for _, m := range res.Metrics {
		if m.Met != nil {
			met[m.Name] = *m.Met
		}
	}
	want := map[string]bool{
		"release total":                     true,  // 4.3 s / mean(3 s, 5 s) = 1.075
		"step transition p50":               false, // 60 ms
		"finalising beyond the native tail": true,  // 300 ms - mean(100 ms, 300 ms)
		"step 1: manager writes":            true,  // 5 <= 15 + 3
		"step 2: manager writes":            true,  // 7 <= 15 + 7
		"manager peak RSS (release)":        true,
	}
	if diff := cmp.Diff(want, met); diff != "" {
		t.Errorf("targets met (-want +got):\n%s", diff)
	}
	for _, m := range res.Metrics {
		if m.Name == "finalising beyond the native tail" && m.Value != 0.1 {
			t.Errorf("finalising beyond the native tail = %v s, want 0.1 s", m.Value)
		}
	}
	if s := res.Latencies["step transition"]; s.N != 1 || s.P50Ms != 60 {
		t.Errorf("transition summary %+v", s)
	}
	for _, m := range res.Metrics {
		if m.Name == "release total" && (m.Baseline == nil || *m.Baseline != 4 || !strings.Contains(m.Note, "3.0 s before the release, 5.0 s after")) {
			t.Errorf("release total: baseline %v, note %q; want the floors' mean, 4 s, and both floors", m.Baseline, m.Note)
		}
	}
}

// At ten thousand replicas the targets are the issue's: 1.05×, 15 ms transitions, writes per pod, 250 MiB.
func TestReleaseMetricsTargetsAt10k(t *testing.T) {
	fig, err := analyseRelease(twoSteps(), []int32{3, 10})
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	release := Phase{Usage: map[string]Usage{ManagerName: {PeakRSSBytes: 200 << 20}, ControllerManagerName: {PeakRSSBytes: 300 << 20}}}
	floors := []floorRun{{took: 3 * time.Second, tail: 100 * time.Millisecond}, {took: 5 * time.Second, tail: 300 * time.Millisecond}}
	addReleaseMetrics(&res, fig, floors, release, release10k)
	res.finish()
	met := map[string]bool{}
	var perPod float64
	for _, m := range res.Metrics {
		if m.Met != nil {
			met[m.Name] = *m.Met
		}
		if m.Name == "manager writes per pod" {
			perPod = m.Value
		}
	}
	want := map[string]bool{
		"release total":                     false, // 1.075 > 1.05
		"step transition p50":               false,
		"finalising beyond the native tail": true,
		"manager writes per pod":            true,
		"manager peak RSS (release)":        true, // 200 MiB <= 250 MiB
	}
	if diff := cmp.Diff(want, met); diff != "" {
		t.Errorf("targets met (-want +got):\n%s", diff)
	}
	total := writes(fig.StartWrites) + writes(fig.FinalisingWrites)
	for _, s := range fig.Steps {
		total += writes(s.Writes)
	}
	if total == 0 || perPod != float64(total)/10000 {
		t.Errorf("writes per pod %v, want %d writes over 10000 replicas", perPod, total)
	}
}

func TestReleaseTargets(t *testing.T) {
	if diff := cmp.Diff([]int32{100, 300, 600, 1000}, releaseTargets(release1k.replicas)); diff != "" {
		t.Error(diff)
	}
}

func TestPartitionOf(t *testing.T) {
	for name, tc := range map[string]struct {
		annotation string
		want       int32
		ok         bool
	}{
		"absent":    {"", 0, false},
		"int":       {`{"rollingStyle":"Partition","partition":300}`, 300, true},
		"percent":   {`{"rollingStyle":"Partition","partition":"10%"}`, 100, true},
		"malformed": {`{"partition":`, 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1000)}}
			if tc.annotation != "" {
				d.Annotations = map[string]string{rolloutsv1beta1.DeploymentStrategyAnnotation: tc.annotation}
			}
			got, ok := partitionOf(d)
			if got != tc.want || ok != tc.ok {
				t.Errorf("partitionOf = %d, %t; want %d, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestBatchWritesKeepsRisesOnly(t *testing.T) {
	scrapes := 0
	b := &batchWrites{scrape: func() (map[RequestKey]float64, error) { scrapes++; return map[RequestKey]float64{}, nil }}
	for i, p := range []string{"0", "0", "100", "100", "300", "100"} {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{rolloutsv1beta1.DeploymentStrategyAnnotation: `{"partition":` + p + `}`}},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1000)},
		}
		b.observe(at(i), d)
	}
	var got []int32
	for _, m := range b.list {
		got = append(got, m.Updated)
	}
	if diff := cmp.Diff([]int32{0, 100, 300}, got); diff != "" || scrapes != 3 {
		t.Errorf("partitions %v (diff %s), %d scrapes", got, diff, scrapes)
	}
}

func TestRolloutProgressNeedsProgressingFirst(t *testing.T) {
	healthy := rolloutsv1beta1.RolloutStatus{Phase: rolloutsv1beta1.RolloutPhaseHealthy,
		CanaryStatus: &rolloutsv1beta1.CanaryStatus{CommonStatus: rolloutsv1beta1.CommonStatus{CurrentStepState: rolloutsv1beta1.CanaryStepStateCompleted}}}
	finalising := *healthy.DeepCopy()
	finalising.CanaryStatus.FinalisingStep = rolloutsv1beta1.FinalisingStepResumeWorkload
	progressing := rolloutsv1beta1.RolloutStatus{Phase: rolloutsv1beta1.RolloutPhaseProgressing}
	var p rolloutProgress
	for i, tc := range []struct {
		status rolloutsv1beta1.RolloutStatus
		done   bool
	}{{healthy, false}, {progressing, false}, {finalising, false}, {healthy, true}} {
		if got := p.note(tc.status); got != tc.done {
			t.Errorf("event %d: done = %t, want %t", i, got, tc.done)
		}
	}
}

func TestRolledOut(t *testing.T) {
	d := func(gen, observed int64, updated, available int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](10)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: 10,
				UpdatedReplicas: updated, AvailableReplicas: available},
		}
	}
	for name, tc := range map[string]struct {
		d    *appsv1.Deployment
		want bool
	}{
		"done":            {d(2, 2, 10, 10), true},
		"stale status":    {d(2, 1, 10, 10), false},
		"not all updated": {d(2, 2, 9, 10), false},
		"not available":   {d(2, 2, 10, 8), false},
	} {
		if got := rolledOut(tc.d); got != tc.want {
			t.Errorf("%s: rolledOut = %t", name, got)
		}
	}
}

func TestMarksAwait(t *testing.T) {
	m := newMarks()
	m.add(1, at(1))
	go m.add(5, at(5))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := m.await(ctx, 3)
	if err != nil || got != (mark{5, at(5)}) {
		t.Fatalf("await = %+v, %v", got, err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelShort()
	if _, err := m.await(short, 9); err == nil {
		t.Error("await of a value that never comes must end with the context")
	}
}

func TestReleaseClusterHoldsBothDeployments(t *testing.T) {
	for sc, s := range map[releaseScale]Scenario{release1k: deploymentRollout(true), release10k: deploymentRollout10k()} {
		size := clusterSize(s)
		// Both Deployments, plus the 25% surge of the one being rolled.
		if need := 2*sc.replicas + sc.replicas/4; size.Nodes*size.PodsPerNode < need || !size.ControllerManager || !size.Scheduler {
			t.Errorf("%s: cluster %+v cannot hold %d pods", s.Name, size, need)
		}
	}
}

func TestReleaseChangeIsOneStrategicPatch(t *testing.T) {
	id := `"` + rolloutsv1beta1.RolloutIDLabel + `":"v2"`
	for _, withID := range []bool{true, false} {
		change := string(releaseChange(withID, releaseID))
		if !json.Valid([]byte(change)) || strings.Contains(change, id) != withID {
			t.Errorf("change %s: valid JSON and a rollout-id only with an ID (%v)", change, withID)
		}
		for _, want := range []string{`"name":"app"`, `"name":"VERSION"`} {
			if !strings.Contains(change, want) {
				t.Errorf("change %s lacks %s", change, want)
			}
		}
	}
	if deploymentRollout(false).Name == deploymentRollout(true).Name {
		t.Error("the two release scenarios share a name")
	}
}

func TestDescribePath(t *testing.T) {
	path := []hop{{"ReplicaSet status", at(990), true}, {"batch Ready", time.Time{}, false},
		{"Rollout step 2", at(2500), true}, {"partition", at(2520), true}}
	want := "ReplicaSet status -10 ms, batch Ready not seen, Rollout step 2 +1.50 s, partition +1.52 s"
	if got := describePath(at(1000), path); got != want {
		t.Errorf("describePath = %q, want %q", got, want)
	}
}

func TestReadyPodsCountsNewPodsOnce(t *testing.T) {
	pod := func(uid string, ready, labelled bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Labels: map[string]string{}}}
		if labelled {
			p.Labels[rolloutsv1beta1.RolloutIDLabel] = releaseID
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		return p
	}
	p := &readyPods{old: map[types.UID]bool{"old": true}, seen: map[types.UID]bool{}, labelled: map[types.UID]bool{},
		marks: newMarks(), labels: newMarks()}
	for i, obj := range []*corev1.Pod{pod("old", true, true), pod("a", false, true), pod("a", true, true),
		pod("a", true, true), pod("b", true, false), pod("b", true, true)} {
		p.observe(at(i), obj)
	}
	if diff := cmp.Diff([]mark{{1, at(2)}, {2, at(4)}}, p.all()); diff != "" {
		t.Errorf("ready (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]mark{{1, at(1)}, {2, at(5)}}, p.labels.all()); diff != "" {
		t.Errorf("labelled (-want +got):\n%s", diff)
	}
}

// A batch is done when the BatchRelease reports it Ready or passes it: paced, it reports the next batch begun.
func TestBatchProgressCountsPassedBatches(t *testing.T) {
	b := &batchProgress{ready: newMarks(), completed: newMarks()}
	status := func(batch int32, state rolloutsv1beta1.BatchReleaseBatchStateType) runtime.Object {
		br := &rolloutsv1beta1.BatchRelease{Status: rolloutsv1beta1.BatchReleaseStatus{
			CanaryStatus: rolloutsv1beta1.BatchReleaseCanaryStatus{CurrentBatch: batch, CurrentBatchState: state}}}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(br)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: u}
	}
	b.observe(at(100), status(0, rolloutsv1beta1.VerifyingBatchState))
	b.observe(at(200), status(1, rolloutsv1beta1.VerifyingBatchState))
	b.observe(at(300), status(1, rolloutsv1beta1.ReadyBatchState))
	b.observe(at(400), status(3, rolloutsv1beta1.VerifyingBatchState))
	want := []mark{{1, at(200)}, {2, at(300)}, {3, at(400)}}
	if diff := cmp.Diff(want, b.ready.all()); diff != "" {
		t.Errorf("batches done (-want +got):\n%s", diff)
	}
}
