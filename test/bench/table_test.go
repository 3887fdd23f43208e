package bench

import (
	"strings"
	"testing"
)

func TestFormatValue(t *testing.T) {
	tests := []struct {
		unit string
		v    float64
		want string
	}{
		{UnitSeconds, 0.0123, "12.3 ms"},
		{UnitSeconds, 61.25, "61.2 s"},
		{UnitMilliseconds, 1.234, "1.23 ms"},
		{UnitBytes, 150 << 20, "150.0 MiB"},
		{UnitBytes, 2048, "2.0 KiB"},
		{UnitBytes, 12, "12 B"},
		{UnitCores, 0.0042, "0.42% core"},
		{UnitCount, 13, "13"},
		{UnitNsPerOp, 2260, "2.26 µs/op"},
		{UnitNsPerOp, 3_500_000, "3.50 ms/op"},
		{UnitNsPerOp, 87, "87 ns/op"},
		{UnitPerPod, 5.7285, "5.73 per pod"},
		{UnitPerNode, 3.004, "3.00 per node"},
		{UnitPerNamespace, 1.002, "1.00 per namespace"},
		{UnitPerPod, 0.0228, "0.023 per pod"},
		{UnitPerRollout, 0, "0.00 per Rollout"},
		{"widgets", 3, "3 widgets"},
	}
	for _, tt := range tests {
		if got := FormatValue(tt.unit, tt.v); got != tt.want {
			t.Errorf("FormatValue(%s, %v) = %q, want %q", tt.unit, tt.v, got, tt.want)
		}
	}
}

func TestRenderTable(t *testing.T) {
	results := []Result{
		{
			Scenario: "manager-idle", WallSeconds: 60, TotalSeconds: 300,
			Metrics: []Metric{
				Metric{Name: "manager peak RSS (idle)", Unit: UnitBytes, Value: 40 << 20}.
					Compared("kube-controller-manager", 160<<20).WithTarget(150 << 20).checked(),
				Metric{Name: "manager CPU (idle)", Unit: UnitCores, Value: 0.02}.WithTarget(0.01).checked(),
			},
			APIRequests:   []RequestCount{{Verb: "list", Resource: "pods", Count: 1}, {Verb: "watch", Resource: "pods", Count: 2}},
			SetupRequests: []RequestCount{{Verb: "get", Resource: "nonresource", Count: 20}},
		},
		{Scenario: "broken", Error: "cluster did not start\nlong details"},
	}
	var out strings.Builder
	if err := RenderTable(&out, results); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	wantLines := []string{
		"SCENARIO      METRIC                   VALUE       BASELINE                             RATIO  TARGET                NOTE",
		"manager-idle  measured phase           60.0 s                                                                        scenario 300.0 s in total",
		"              manager peak RSS (idle)  40.0 MiB    160.0 MiB (kube-controller-manager)  0.25x  <= 150.0 MiB ok",
		"              manager CPU (idle)       2.00% core                                              <= 1.00% core MISSED",
		"broken        measured phase           0.0 ms                                                                        scenario 0.0 ms in total",
		"              ERROR                                                                                                  cluster did not start",
		"manager-idle: manager requests before the measured phase: get nonresource 20",
		"manager-idle: manager requests in the measured phase: list pods 1, watch pods 2",
	}
	if len(lines) != len(wantLines) {
		t.Fatalf("table:\n%s", out.String())
	}
	for i := range wantLines {
		if strings.TrimRight(lines[i], " ") != wantLines[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, lines[i], wantLines[i])
		}
	}
}

func TestRenderRequestsIsBounded(t *testing.T) {
	var requests []RequestCount
	for range maxRequestLines + 3 {
		requests = append(requests, RequestCount{Verb: "get", Resource: "pods", Count: 1})
	}
	var out strings.Builder
	if err := renderRequests(&out, []Result{{Scenario: "s", APIRequests: requests}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "get pods 1"); got != maxRequestLines || !strings.Contains(out.String(), "... 3 more") {
		t.Fatalf("output = %q", out.String())
	}
}

func TestRenderMarkdown(t *testing.T) {
	results := []Result{
		{Scenario: "manager-idle", Metrics: []Metric{
			Metric{Name: "manager peak RSS (idle)", Unit: UnitBytes, Value: 40 << 20}.
				Compared("kube-controller-manager", 160<<20).WithTarget(150 << 20).checked(),
			Metric{Name: "release total", Unit: UnitSeconds, Value: 12}.Compared("plain Deployment", 10).WithRatioTarget(1.15).checked(),
		}},
		{Scenario: "broken", Error: "cluster did not start\nlong details"},
	}
	var out strings.Builder
	if err := RenderMarkdown(&out, results); err != nil {
		t.Fatal(err)
	}
	want := "| scenario | metric | value | baseline | ratio | target |\n|---|---|---|---|---|---|\n" +
		"| manager-idle | manager peak RSS (idle) | 40.0 MiB | 160.0 MiB (kube-controller-manager) | 0.25× | ≤ 150.0 MiB: met |\n" +
		"|  | release total | 12.0 s | 10.0 s (plain Deployment) | 1.2× | ≤ 1.15×: **missed** |\n" +
		"| broken | ERROR: cluster did not start |  |  |  |  |\n"
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}
