package controller

import (
	"errors"
	"testing"

	"github.com/flotilla-dev/flotilla/test/managertest"
)

// operations reads the counter of one operation and result from the registry the manager serves.
func operations(t *testing.T, op, result string) float64 {
	t.Helper()
	return managertest.Counter(t, CopyOperationsName, map[string]string{"operation": op, "result": result})
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
