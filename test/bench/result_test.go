package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func durations(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

func TestSummarizeNearestRank(t *testing.T) {
	// 1..100 ms, shuffled: p50 is the 50th value, p95 the 95th.
	var samples []time.Duration
	for i := 100; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	got := Summarize(samples)
	want := Summary{N: 100, MinMs: 1, P50Ms: 50, P95Ms: 95, P99Ms: 99, MaxMs: 100, MeanMs: 50.5}
	if got != want {
		t.Fatalf("Summarize = %+v, want %+v", got, want)
	}
	if samples[0] != 100*time.Millisecond {
		t.Fatal("Summarize reordered its input")
	}
}

func TestSummarizeSmallInputs(t *testing.T) {
	if got := Summarize(nil); got != (Summary{}) {
		t.Errorf("Summarize(nil) = %+v", got)
	}
	got := Summarize(durations(7))
	if got.P50Ms != 7 || got.P99Ms != 7 || got.N != 1 {
		t.Errorf("one sample = %+v", got)
	}
	got = Summarize(durations(1, 2, 3))
	if got.P50Ms != 2 || got.P95Ms != 3 {
		t.Errorf("three samples = %+v", got)
	}
}

func TestComparedRatio(t *testing.T) {
	m := Metric{Name: "rss", Value: 30}.Compared("kcm", 120)
	if m.Ratio == nil || *m.Ratio != 0.25 || *m.Baseline != 120 || m.BaselineName != "kcm" {
		t.Fatalf("Compared = %+v", m)
	}
	if zero := (Metric{Value: 3}).Compared("kcm", 0); zero.Ratio != nil || zero.Baseline == nil {
		t.Fatalf("a zero baseline must keep the baseline and leave the ratio unset: %+v", zero)
	}
}

func TestTargets(t *testing.T) {
	tests := []struct {
		name string
		m    Metric
		met  bool
	}{
		{"value within", Metric{Value: 100}.WithTarget(150), true},
		{"value at the limit", Metric{Value: 150}.WithTarget(150), true},
		{"value over", Metric{Value: 151}.WithTarget(150), false},
		{"ratio within", Metric{Value: 11}.Compared("native", 10).WithRatioTarget(1.2), true},
		{"ratio over", Metric{Value: 13}.Compared("native", 10).WithRatioTarget(1.2), false},
		{"ratio target without a ratio", Metric{Value: 1}.Compared("native", 0).WithRatioTarget(1.2), false},
	}
	for _, tt := range tests {
		got := tt.m.checked()
		if got.Met == nil || *got.Met != tt.met {
			t.Errorf("%s: Met = %v, want %v", tt.name, got.Met, tt.met)
		}
	}
	if (Metric{Value: 1}).checked().Met != nil {
		t.Error("a metric without a target must leave Met unset")
	}
}

func TestRecordAddsRequestTotals(t *testing.T) {
	var r Result
	r.Record(Phase{
		Wall: 2 * time.Second, ManagerRunning: true,
		Requests: []RequestCount{
			{Verb: "list", Resource: "pods", Count: 2}, {Verb: "watch", Resource: "pods", Count: 1},
			{Verb: "patch", Resource: "pods", Count: 5}, {Verb: "create", Resource: "events", Count: 3},
			{Verb: "update", Resource: "rollouts/status", Count: 1}, {Verb: "delete", Resource: "pods", Count: 1},
		},
		Usage: map[string]Usage{ManagerName: {PeakRSSBytes: 1}},
	})
	if r.WallSeconds != 2 || len(r.APIRequests) != 6 || r.Processes[ManagerName].PeakRSSBytes != 1 {
		t.Fatalf("Record = %+v", r)
	}
	got := map[string]float64{}
	for _, m := range r.Metrics {
		got[m.Name] = m.Value
	}
	if got["manager API requests"] != 13 || got["manager API writes"] != 10 {
		t.Fatalf("totals = %v, want 13 requests and 10 writes", got)
	}
}

func TestRecordWithoutManagerAddsNoRequestMetrics(t *testing.T) {
	var r Result
	r.Record(Phase{Wall: time.Second})
	if len(r.Metrics) != 0 {
		t.Fatalf("metrics = %+v", r.Metrics)
	}
}

func TestAddLatency(t *testing.T) {
	var r Result
	r.AddLatency("step", durations(10, 20, 30, 40))
	if r.Latencies["step"].N != 4 || len(r.Metrics) != 2 {
		t.Fatalf("result = %+v", r)
	}
	if r.Metrics[0].Name != "step p50" || r.Metrics[0].Value != 20 || r.Metrics[1].Value != 40 {
		t.Fatalf("metrics = %+v", r.Metrics)
	}
}

func TestWriteJSONOneObjectPerScenario(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "bench-results.json")
	results := []Result{
		{Scenario: "a", GoVersion: "go1.26", Commit: "abc", Cluster: ClusterSize{Nodes: 3},
			Metrics: []Metric{Metric{Name: "x", Unit: UnitBytes, Value: 5}.WithTarget(10).checked()}},
		{Scenario: "b", Error: "boom"},
	}
	if err := WriteJSON(path, results); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0]["scenario"] != "a" || got[0]["goVersion"] != "go1.26" || got[0]["commit"] != "abc" {
		t.Fatalf("file = %s", data)
	}
	if nodes := got[0]["cluster"].(map[string]any)["nodes"]; nodes != float64(3) {
		t.Errorf("cluster.nodes = %v", nodes)
	}
	if met := got[0]["metrics"].([]any)[0].(map[string]any)["met"]; met != true {
		t.Errorf("met = %v", met)
	}
	if got[1]["error"] != "boom" {
		t.Errorf("error = %v", got[1]["error"])
	}
}
