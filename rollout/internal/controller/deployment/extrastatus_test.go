package deployment

import (
	"testing"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestExtraStatusChange(t *testing.T) {
	prev := `{"updatedReadyReplicas":20,"expectedUpdatedReplicas":100}`
	st := func(ready, expected int32) rolloutsv1beta1.DeploymentExtraStatus {
		return rolloutsv1beta1.DeploymentExtraStatus{UpdatedReadyReplicas: ready, ExpectedUpdatedReplicas: expected}
	}
	tests := []struct {
		name     string
		prev     string
		next     rolloutsv1beta1.DeploymentExtraStatus
		write    bool
		progress bool
	}{
		{"nothing written yet", "", st(0, 100), true, true},
		{"nothing written yet, nothing to write", "", st(0, 0), false, false},
		{"unreadable", "{", st(0, 100), true, true},
		{"unchanged", prev, st(20, 100), false, false},
		{"new partition", prev, st(20, 300), true, true},
		{"partition reached", prev, st(100, 100), true, true},
		{"more ready", prev, st(30, 100), true, true},
		{"fewer ready", prev, st(19, 100), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write, progress := extraStatusChange(tt.prev, tt.next)
			if write != tt.write || progress != tt.progress {
				t.Errorf("extraStatusChange = %v, %v; want %v, %v", write, progress, tt.write, tt.progress)
			}
		})
	}
}
