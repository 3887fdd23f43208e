package controller

import (
	"errors"
	"testing"

	"github.com/flotilla-dev/flotilla/test/managertest"
)

// operations reads the counter of one operation and result from the registry the manager serves.
func operations(t *testing.T, op, result string) float64 {
	t.Helper()
	return managertest.Counter(t, SubsetOperationsName, map[string]string{"operation": op, "result": result})
}

func TestCountOperation(t *testing.T) {
	failed, created := operations(t, opUpdate, "failure"), operations(t, opCreate, "success")
	countOperation(opUpdate, errors.New("quota"))
	countOperation(opCreate, nil)
	if operations(t, opUpdate, "failure") != failed+1 || operations(t, opCreate, "success") != created+1 {
		t.Fatalf("updates failed %v (was %v), creations %v (was %v)", operations(t, opUpdate, "failure"), failed,
			operations(t, opCreate, "success"), created)
	}
}
