package controller

import (
	"errors"
	"testing"

	"github.com/flotilla-dev/flotilla/test/managertest"
)

// operations reads the counter of one operation and result from the registry the manager serves.
func operations(t *testing.T, op, result string) float64 {
	t.Helper()
	return managertest.Counter(t, JobOperationsName, map[string]string{"operation": op, "result": result})
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
