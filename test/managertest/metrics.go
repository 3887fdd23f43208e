package managertest

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Counter reads a counter of controller-runtime's registry, where the manager and the node agent serve their
// metrics: the sum of the series of name whose labels include labels (0 when none matches).
func Counter(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsInclude(m.GetLabel(), labels) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func labelsInclude[L interface {
	GetName() string
	GetValue() string
}](have []L, want map[string]string) bool {
	found := 0
	for _, l := range have {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}
