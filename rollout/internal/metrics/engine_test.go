package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
)

func TestEngineReleasing(t *testing.T) {
	reg := prometheus.NewRegistry()
	e, err := NewEngine(reg)
	if err != nil {
		t.Fatal(err)
	}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	steps := []struct {
		key       types.NamespacedName
		releasing bool
		want      float64
	}{
		{a, true, 1}, {a, true, 1}, {b, true, 2}, {a, false, 1}, {a, false, 1}, {b, false, 0},
	}
	for i, s := range steps {
		e.Releasing(s.key, s.releasing)
		if got := gathered(t, reg, ReleasesInProgressName).GetGauge().GetValue(); got != s.want {
			t.Errorf("step %d: in progress %v, want %v", i, got, s.want)
		}
	}
}

func TestEngineReleaseFinished(t *testing.T) {
	reg := prometheus.NewRegistry()
	e, err := NewEngine(reg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	e.ReleaseFinished("Success", now.Add(-90*time.Second), now)
	e.ReleaseFinished("Success", time.Time{}, now) // start unknown: counted, not timed
	e.ReleaseFinished("", now, now)                // no release ended: nothing
	if got := gathered(t, reg, ReleasesName).GetCounter().GetValue(); got != 2 {
		t.Errorf("releases %v, want 2", got)
	}
	h := gathered(t, reg, ReleaseDurationName).GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() != 90 {
		t.Errorf("durations: %d observed, sum %v; want 1 of 90 s", h.GetSampleCount(), h.GetSampleSum())
	}
}

// gathered is the only series of the metric name in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0]
		}
	}
	t.Fatalf("%s: no single series gathered", name)
	return nil
}
