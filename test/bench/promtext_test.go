package bench

import (
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
