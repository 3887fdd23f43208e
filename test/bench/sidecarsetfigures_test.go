package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// slowTail is n samples: 1 ms each, but the last `slow` ones take slowMs.
func slowTail(n, slow int, slowMs float64) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Millisecond
		if i >= n-slow {
			out[i] = time.Duration(slowMs * float64(time.Millisecond))
		}
	}
	return out
}

func TestInjectFiguresCompareEachCaseWithItsPhasesBaseline(t *testing.T) {
	phases := []injectPhase{
		{Sets: 0, Cases: []injectCase{baselineCase, {Name: "webhook"}}},
		{Sets: 10, Cases: []injectCase{baselineCase, {Name: "one"}, {Name: "all"}}},
	}
	samples := map[string]map[string][]time.Duration{
		phaseName(0):  {caseNoWebhook: slowTail(100, 2, 5), "webhook": slowTail(100, 2, 12)},
		phaseName(10): {caseNoWebhook: slowTail(100, 2, 30), "one": slowTail(100, 2, 35), "all": slowTail(100, 2, 50)},
	}
	figures, err := injectFigures(phases, samples)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"webhook": 7, "one": 5, "all": 20} // p99 of 100 samples: the 99th, the first slow one
	if len(figures) != len(want) {
		t.Fatalf("%d figures, want %d", len(figures), len(want))
	}
	for _, f := range figures {
		if got := f.AddedP99(); math.Abs(got-want[f.Case]) > 1e-9 {
			t.Errorf("%s: added p99 %.3f ms, want %.3f", f.Case, got, want[f.Case])
		}
		if f.AddedP50() != 0 {
			t.Errorf("%s: added p50 %.3f ms, want 0", f.Case, f.AddedP50())
		}
	}

	var res Result
	calls := map[string]webhookCalls{phaseName(10): {Count: 200, Seconds: 0.6, Over5ms: 4, Over25ms: 1}}
	if err := addInjectMetrics(&res, phases, samples, calls); err != nil {
		t.Fatal(err)
	}
	res.finish()
	met := map[string]bool{}
	for _, m := range res.Metrics {
		if m.Met != nil {
			met[m.Name] = *m.Met
		}
	}
	wantMet := map[string]bool{"webhook: p99 added by the webhook": true, "one: p99 added by the webhook": true,
		"all: p99 added by the webhook": false}
	for name, w := range wantMet {
		if got, ok := met[name]; !ok || got != w {
			t.Errorf("%s: met %v (present %v), want %v", name, got, ok, w)
		}
	}
	if s := res.Latencies[phaseName(10)+": "+caseNoWebhook]; s.N != 100 || s.P99Ms != 30 {
		t.Errorf("baseline latency of the 10-set phase: %+v", s)
	}
	notes := map[string]string{}
	for _, m := range res.Metrics {
		notes[m.Name] = m.Note
	}
	if n := notes["all: p99 added by the webhook"]; !strings.Contains(n, "200 calls to the webhook: mean 3.00 ms, 2.0% over 5 ms, 0.5% over 25 ms") {
		t.Errorf("10-set phase's note %q", n)
	}
	if n := notes["webhook: p99 added by the webhook"]; !strings.Contains(n, "called the webhook for no pod") {
		t.Errorf("0-set phase's note %q", n)
	}
}

// The webhook's calls are read off the rise of the API server's histogram of the bench's webhook alone.
func TestWebhookCallsBetween(t *testing.T) {
	series := func(name string, le string, v float64) Sample {
		labels := map[string]string{"name": name, "operation": "CREATE", "type": "admit", "rejected": "false"}
		if le != "" {
			labels["le"] = le
		}
		suffix := map[bool]string{true: "_bucket", false: "_count"}[le != ""]
		return Sample{Name: webhookDuration + suffix, Labels: labels, Value: v}
	}
	reading := func(calls, under5, under25 float64, seconds float64) []Sample {
		sum := series(injectWebhook, "", seconds)
		sum.Name = webhookDuration + "_sum"
		return []Sample{
			series(injectWebhook, "", calls), sum, series(injectWebhook, "0.005", under5),
			series(injectWebhook, "0.025", under25), series(injectWebhook, "+Inf", calls),
			series("mpod.kb.io", "", 1000), series("mpod.kb.io", "0.005", 0), series("mpod.kb.io", "+Inf", 1000),
		}
	}
	got, err := webhookCallsBetween(reading(10, 10, 10, 0.01), reading(110, 90, 108, 0.31))
	if err != nil {
		t.Fatal(err)
	}
	if want := (webhookCalls{Count: 100, Seconds: 0.3, Over5ms: 20, Over25ms: 2}); math.Abs(got.Seconds-want.Seconds) > 1e-9 ||
		got.Count != want.Count || got.Over5ms != want.Over5ms || got.Over25ms != want.Over25ms {
		t.Errorf("calls %+v, want %+v", got, want)
	}
}

func TestInjectFiguresNeedEveryCase(t *testing.T) {
	phases := []injectPhase{{Sets: 1, Cases: []injectCase{baselineCase, {Name: "one"}}}}
	if _, err := injectFigures(phases, map[string]map[string][]time.Duration{phaseName(1): {caseNoWebhook: slowTail(10, 0, 0)}}); err == nil {
		t.Error("a case without samples passed")
	}
	if _, err := injectFigures(phases, map[string]map[string][]time.Duration{phaseName(1): {"one": slowTail(10, 0, 0)}}); err == nil {
		t.Error("a phase without its baseline passed")
	}
}

// upgradedPod is a pod whose sidecar and app containers report images and restart counts.
func upgradedPod(uid, sidecarImage string, sidecarRestarts, appRestarts int32) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
		{Name: "app", Image: benchImage, RestartCount: appRestarts},
		{Name: upgradeSidecar, Image: sidecarImage, RestartCount: sidecarRestarts},
	}}}
}

func TestCountSidecarReplacement(t *testing.T) {
	before := map[types.UID]bool{"a": true, "b": true, "c": true, "d": true}
	pods := []corev1.Pod{
		upgradedPod("a", inPlaceImage, 1, 0),   // in place
		upgradedPod("b", inPlaceImage, 1, 1),   // the app restarted too: not in place
		upgradedPod("c", benchImage, 0, 0),     // not updated
		upgradedPod("d", inPlaceImage, 2, 0),   // restarted twice
		upgradedPod("new", inPlaceImage, 0, 0), // re-created
	}
	got := countSidecarReplacement(pods, before, upgradeSidecar)
	want := sidecarReplacement{Pods: 5, Kept: 4, InPlace: 1, OnImage: 4}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestCheckUpgrade(t *testing.T) {
	inPlace := upgradeRun{Kind: kindSidecarSet, Pods: sidecarReplacement{Pods: upgradePods, Kept: upgradePods, InPlace: upgradePods, OnImage: upgradePods}}
	recreated := upgradeRun{Kind: kindNativeDeployment, Pods: sidecarReplacement{Pods: upgradePods, OnImage: upgradePods}}
	if err := checkUpgrade(inPlace, recreated); err != nil {
		t.Fatal(err)
	}
	short := inPlace
	short.Pods.InPlace--
	if checkUpgrade(short, recreated) == nil {
		t.Error("a SidecarSet run that did not update every pod in place passed")
	}
	if checkUpgrade(inPlace, inPlace) == nil {
		t.Error("a Deployment run that kept its pods passed")
	}
}
