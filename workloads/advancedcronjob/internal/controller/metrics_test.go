package controller

import (
	"errors"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// operations reads the counter of one operation and result from the registry the manager serves.
func operations(t *testing.T, op, result string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != JobOperationsName {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["operation"] == op && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestCountOperation(t *testing.T) {
	failed, deleted := operations(t, opCreate, "failure"), operations(t, opDelete, "success")
	countOperation(opCreate, errors.New("quota"))
	countOperation(opDelete, nil)
	if operations(t, opCreate, "failure") != failed+1 || operations(t, opDelete, "success") != deleted+1 {
		t.Fatalf("creations failed %v (was %v), deletions %v (was %v)", operations(t, opCreate, "failure"), failed,
			operations(t, opDelete, "success"), deleted)
	}
}
