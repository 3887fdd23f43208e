package containerrecreate

import (
	"testing"

	"github.com/flotilla-dev/flotilla/test/managertest"
)

// counted reads the recreation counter of result from the registry the agent serves.
func counted(t *testing.T, result string) float64 {
	t.Helper()
	return managertest.Counter(t, RecreatesName, map[string]string{"result": result})
}

func TestCountFinished(t *testing.T) {
	succeeded, failed := counted(t, resultSucceeded), counted(t, resultFailed)
	before := crrStatus{ContainerRecreateStates: []containerState{st("a", phaseSucceeded, true), st("b", phaseRecreating, true), st("c", phasePending, false)}}
	after := crrStatus{ContainerRecreateStates: []containerState{st("a", phaseSucceeded, true), st("b", phaseSucceeded, true), st("c", phaseFailed, false)}}
	countFinished(before, after)
	countFinished(after, after) // nothing new
	if got := counted(t, resultSucceeded) - succeeded; got != 1 {
		t.Errorf("succeeded grew by %v, want 1", got)
	}
	if got := counted(t, resultFailed) - failed; got != 1 {
		t.Errorf("failed grew by %v, want 1", got)
	}
}
