package bench

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestDistributedNeedsEveryTargetSucceededAtTheCurrentGeneration(t *testing.T) {
	status := func(gen, observed int64, desired, succeeded, failed int32) *kruiseappsv1alpha1.ResourceDistribution {
		return &kruiseappsv1alpha1.ResourceDistribution{ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Status: kruiseappsv1alpha1.ResourceDistributionStatus{ObservedGeneration: observed, Desired: desired,
				Succeeded: succeeded, Failed: failed}}
	}
	for _, c := range []struct {
		name string
		rd   *kruiseappsv1alpha1.ResourceDistribution
		want bool
	}{
		{"done", status(2, 2, 1000, 1000, 0), true},
		{"an older generation's status", status(2, 1, 1000, 1000, 0), false},
		{"some targets not yet succeeded", status(1, 1, 1000, 999, 0), false},
		{"some targets failed", status(1, 1, 1000, 999, 1), false},
		{"fewer targets than namespaces", status(1, 1, 999, 999, 0), false},
		{"no status yet", status(1, 0, 0, 0, 0), false},
	} {
		if got := distributed(c.rd, 1000); got != c.want {
			t.Errorf("%s: distributed %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDistributionMetricsCountWritesPerNamespaceAgainstTheTarget(t *testing.T) {
	phase := func(creates, updates, patches int64) Phase {
		return Phase{ManagerRunning: true, Requests: []RequestCount{
			{Verb: "create", Resource: "secrets", Count: creates}, {Verb: "update", Resource: "secrets", Count: updates},
			{Verb: "patch", Resource: "resourcedistributions", Count: patches}, {Verb: "list", Resource: "secrets", Count: 50}}}
	}
	var res Result
	addDistributionMetrics(&res, []rdChange{
		{Name: "create", Phase: phase(rdNamespaces, 0, 2)},
		{Name: "edit", Phase: phase(0, 1200, 2)},
	})
	res.finish()
	want := map[string]struct {
		value float64
		met   bool
	}{
		"manager writes per namespace (create)": {1.002, true},
		"manager writes per namespace (edit)":   {1.202, false},
	}
	for _, m := range res.Metrics {
		w, ok := want[m.Name]
		if !ok {
			continue
		}
		delete(want, m.Name)
		if m.Value != w.value || m.Met == nil || *m.Met != w.met {
			t.Errorf("%s: %v (met %v), want %v (met %v)", m.Name, m.Value, m.Met, w.value, w.met)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing metrics %v", want)
	}
}
