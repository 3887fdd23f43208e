package bench

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

const managerMetrics = `# HELP flotilla_client_requests_total Requests flotilla-manager sent.
# TYPE flotilla_client_requests_total counter
flotilla_client_requests_total{resource="pods",verb="list"} 1
flotilla_client_requests_total{resource="pods",verb="watch"} 2
flotilla_client_requests_total{verb="patch",resource="deployments/status"} 7
flotilla_client_requests_total{resource="nonresource",verb="get"} 12
# TYPE go_goroutines gauge
go_goroutines 42
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 99 1700000000000
weird{path="a\"b\\c\nd",x=""} 1.5e+03
`

func TestParseText(t *testing.T) {
	samples, err := ParseText(strings.NewReader(managerMetrics))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 7 {
		t.Fatalf("%d samples: %+v", len(samples), samples)
	}
	if s := samples[4]; s.Name != "go_goroutines" || s.Value != 42 || len(s.Labels) != 0 {
		t.Errorf("gauge = %+v", s)
	}
	if s := samples[5]; s.Value != 99 || s.Labels["method"] != "GET" || s.Labels["host"] != "127.0.0.1:6443" {
		t.Errorf("sample with a timestamp = %+v", s)
	}
	want := map[string]string{"path": "a\"b\\c\nd", "x": ""}
	if s := samples[6]; !reflect.DeepEqual(s.Labels, want) || s.Value != 1500 {
		t.Errorf("escaped labels = %+v, want %q", s, want)
	}
}

func TestParseTextRejectsGarbage(t *testing.T) {
	for _, text := range []string{
		"metric_without_value\n",
		`m{a="1"` + "\n",
		`m{a="1} 3` + "\n",
		`m{a=1} 3` + "\n",
		"m not-a-number\n",
	} {
		if _, err := ParseText(strings.NewReader(text)); err == nil {
			t.Errorf("ParseText(%q) succeeded", text)
		}
	}
}

func TestClientRequestsAndDiff(t *testing.T) {
	samples, err := ParseText(strings.NewReader(managerMetrics))
	if err != nil {
		t.Fatal(err)
	}
	after := ClientRequests(samples)
	if len(after) != 4 || after[RequestKey{"patch", "deployments/status"}] != 7 {
		t.Fatalf("ClientRequests = %v", after)
	}
	before := map[RequestKey]float64{{"list", "pods"}: 1, {"watch", "pods"}: 1, {"get", "nonresource"}: 2}
	got := DiffRequests(before, after)
	want := []RequestCount{
		{Verb: "get", Resource: "nonresource", Count: 10},
		{Verb: "patch", Resource: "deployments/status", Count: 7},
		{Verb: "watch", Resource: "pods", Count: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DiffRequests = %+v, want %+v", got, want)
	}
	if DiffRequests(after, after) != nil {
		t.Error("no change must give no requests")
	}
}

const durationBefore = `# TYPE d_seconds histogram
d_seconds_bucket{provider="prometheus",le="0.005"} 10
d_seconds_bucket{provider="prometheus",le="0.01"} 10
d_seconds_bucket{provider="prometheus",le="0.025"} 10
d_seconds_bucket{provider="prometheus",le="+Inf"} 10
d_seconds_bucket{provider="web",le="0.005"} 7
d_seconds_bucket{provider="web",le="+Inf"} 7
d_seconds_sum{provider="prometheus"} 0.02
d_seconds_count{provider="prometheus"} 10
`

// 100 more Prometheus queries: 60 within 5 ms, 30 in (5, 10] ms, 9 in (10, 25] ms, 1 beyond; and 5 web calls.
const durationAfter = `d_seconds_bucket{provider="prometheus",le="0.005"} 70
d_seconds_bucket{provider="prometheus",le="0.01"} 100
d_seconds_bucket{provider="prometheus",le="0.025"} 109
d_seconds_bucket{provider="prometheus",le="+Inf"} 110
d_seconds_bucket{provider="web",le="0.005"} 12
d_seconds_bucket{provider="web",le="+Inf"} 12
`

func TestHistogramRiseAndQuantile(t *testing.T) {
	before, err := ParseText(strings.NewReader(durationBefore))
	if err != nil {
		t.Fatal(err)
	}
	after, err := ParseText(strings.NewReader(durationAfter))
	if err != nil {
		t.Fatal(err)
	}
	got, err := histogramRise("d_seconds", map[string]string{"provider": "prometheus"}, before, after)
	if err != nil {
		t.Fatal(err)
	}
	want := []bucket{{0.005, 60}, {0.01, 90}, {0.025, 99}, {math.Inf(1), 100}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rise = %v, want %v", got, want)
	}
	for _, c := range []struct{ q, want float64 }{
		{0.3, 0.0025},  // rank 30 of the first bucket's 60, from 0
		{0.75, 0.0075}, // rank 75: 15 of the 30 in (5, 10] ms
		{0.99, 0.025},  // rank 99: the last of (10, 25] ms
		{0.995, 0.025}, // rank 99.5, in the +Inf bucket: the highest finite bound
	} {
		if q := bucketQuantile(c.q, got); math.Abs(q-c.want) > 1e-12 {
			t.Errorf("q%v = %v, want %v", c.q, q, c.want)
		}
	}
	all, err := histogramRise("d_seconds", nil, before, after)
	if err != nil || len(all) != 4 || all[0].Count != 65 || all[3].Count != 105 {
		t.Errorf("both providers' rise = %v, %v", all, err)
	}
}

func TestBucketQuantileWithoutObservations(t *testing.T) {
	for _, buckets := range [][]bucket{
		nil,
		{{0.005, 3}},                   // no +Inf bucket
		{{0.005, 0}, {math.Inf(1), 0}}, // nothing observed
	} {
		if q := bucketQuantile(0.99, buckets); !math.IsNaN(q) {
			t.Errorf("quantile of %v = %v, want NaN", buckets, q)
		}
	}
	if q := bucketQuantile(0.5, []bucket{{0, 4}, {1, 4}, {math.Inf(1), 4}}); q != 0 {
		t.Errorf("all observations at 0: quantile %v", q)
	}
}

func TestHistogramRiseRejectsABadBound(t *testing.T) {
	bad := []Sample{{Name: "d_seconds_bucket", Labels: map[string]string{"le": "soon"}, Value: 1}}
	if _, err := histogramRise("d_seconds", nil, nil, bad); err == nil {
		t.Error("a bucket bound that is not a number was accepted")
	}
}
