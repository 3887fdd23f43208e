package podmetrics

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestCount(t *testing.T) {
	m := newMetrics("test", "Test")
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.operations)
	m.Count(Create, errors.New("quota"))
	m.Count(Create, nil)
	m.Count(Create, nil)
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || families[0].GetName() != OperationsName("test") {
		t.Fatalf("gather: %v, %d families", err, len(families))
	}
	got := map[string]float64{}
	for _, s := range families[0].GetMetric() {
		labels := map[string]string{}
		for _, l := range s.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		got[labels["operation"]+"/"+labels["result"]] = s.GetCounter().GetValue()
	}
	if len(got) != 2 || got["create/failure"] != 1 || got["create/success"] != 2 {
		t.Errorf("counts %v, want create/failure 1 and create/success 2", got)
	}
}

func TestObserveInPlace(t *testing.T) {
	m := newMetrics("test", "Test")
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.inPlace)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.ObserveInPlace(time.Time{}, start)               // unknown start: not observed
	m.ObserveInPlace(start, start.Add(3*time.Second))  // 3 s
	m.ObserveInPlace(start, start.Add(-3*time.Second)) // clock skew: not observed
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || families[0].GetName() != InPlaceName("test") {
		t.Fatalf("gather: %v, %d families", err, len(families))
	}
	got := families[0].GetMetric()[0].GetHistogram()
	if got.GetSampleCount() != 1 || got.GetSampleSum() != 3 {
		t.Fatalf("histogram count %d sum %v, want 1 and 3", got.GetSampleCount(), got.GetSampleSum())
	}
}
