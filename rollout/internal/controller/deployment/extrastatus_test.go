package deployment

import (
	"testing"
	"time"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestExtraStatusDue(t *testing.T) {
	prev := `{"updatedReadyReplicas":20,"expectedUpdatedReplicas":100}`
	st := func(ready, expected int32) rolloutsv1beta1.DeploymentExtraStatus {
		return rolloutsv1beta1.DeploymentExtraStatus{UpdatedReadyReplicas: ready, ExpectedUpdatedReplicas: expected}
	}
	tests := []struct {
		name  string
		prev  string
		next  rolloutsv1beta1.DeploymentExtraStatus
		since time.Duration
		write bool
		wait  time.Duration
	}{
		{"nothing written yet", "", st(0, 100), 0, true, 0},
		{"unreadable", "{", st(0, 100), 0, true, 0},
		{"unchanged", prev, st(20, 100), 0, false, 0},
		{"new partition", prev, st(20, 300), 0, true, 0},
		{"partition reached, soon after the last write", prev, st(100, 100), 400 * time.Millisecond, false, 600 * time.Millisecond},
		{"partition reached, a second after the last write", prev, st(100, 100), time.Second, true, 0},
		{"fewer ready", prev, st(19, 100), 0, true, 0},
		{"more ready, soon after the last write", prev, st(30, 100), 300 * time.Millisecond, false, 700 * time.Millisecond},
		{"more ready, a second after the last write", prev, st(30, 100), time.Second, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write, wait := extraStatusDue(tt.prev, tt.next, tt.since)
			if write != tt.write || wait != tt.wait {
				t.Errorf("extraStatusDue = %v, %v; want %v, %v", write, wait, tt.write, tt.wait)
			}
		})
	}
}
