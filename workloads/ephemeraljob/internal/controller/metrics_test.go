package controller

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// counterValue reads a counter of the registry the manager serves by its name and one label.
func counterValue(t *testing.T, name, label, value string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
