package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// failedCreations reads the counter from the registry the manager serves.
func failedCreations(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != PodOperationsName {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["operation"] == opCreate && labels["result"] == "failure" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestCountOperation(t *testing.T) {
	before := failedCreations(t)
	countOperation(opCreate, errors.New("quota"))
	if got := failedCreations(t); got != before+1 {
		t.Fatalf("failed creations = %v, want %v", got, before+1)
	}
}

func TestObserveInPlace(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "inplace", Help: "h", Buckets: []float64{1, 5}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(h)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	observeInPlace(h, time.Time{}, start)               // unknown start: not observed
	observeInPlace(h, start, start.Add(3*time.Second))  // 3 s
	observeInPlace(h, start, start.Add(-3*time.Second)) // clock skew: not observed
	families, err := reg.Gather()
	if err != nil || len(families) != 1 {
		t.Fatalf("gather: %v, %d families", err, len(families))
	}
	got := families[0].GetMetric()[0].GetHistogram()
	if got.GetSampleCount() != 1 || got.GetSampleSum() != 3 {
		t.Fatalf("histogram count %d sum %v, want 1 and 3", got.GetSampleCount(), got.GetSampleSum())
	}
}
