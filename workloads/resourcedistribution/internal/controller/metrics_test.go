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
		if f.GetName() != CopyOperationsName {
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
	failed, updated := operations(t, opCreate, "failure"), operations(t, opUpdate, "success")
	countOperation(opCreate, errors.New("quota"))
	countOperation(opUpdate, nil)
	if operations(t, opCreate, "failure") != failed+1 || operations(t, opUpdate, "success") != updated+1 {
		t.Fatalf("creations failed %v (was %v), updates %v (was %v)", operations(t, opCreate, "failure"), failed,
			operations(t, opUpdate, "success"), updated)
	}
}

func TestNamespaceNote(t *testing.T) {
	if got := namespaceNote([]string{"b", "a"}); got != "[a b]" {
		t.Errorf("note %q", got)
	}
	many := []string{"l", "k", "j", "i", "h", "g", "f", "e", "d", "c", "b", "a"}
	if got := namespaceNote(many); got != "[a b c d e f g h i j] and 2 more" {
		t.Errorf("note %q", got)
	}
	if many[0] != "l" {
		t.Error("namespaceNote sorted its argument")
	}
}
