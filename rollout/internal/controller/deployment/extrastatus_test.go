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
		{"nothing written yet", "", st(0, 100), extraStatusInterval, true, 0},
		{"nothing written yet, nothing to write", "", st(0, 0), extraStatusInterval, false, 0},
		{"absent from a cache behind the last write", "", st(0, 100), 50 * time.Millisecond, false, extraStatusInterval - 50*time.Millisecond},
		{"unreadable", "{", st(0, 100), extraStatusInterval, true, 0},
		{"unchanged", prev, st(20, 100), 0, false, 0},
		{"new partition, soon after the last write", prev, st(20, 300), 200 * time.Millisecond, false, extraStatusInterval - 200*time.Millisecond},
		{"new partition, an interval after the last write", prev, st(20, 300), extraStatusInterval, true, 0},
		{"partition reached, soon after the last write", prev, st(100, 100), 400 * time.Millisecond, false, extraStatusInterval - 400*time.Millisecond},
		{"partition reached, an interval after the last write", prev, st(100, 100), extraStatusInterval, true, 0},
		{"fewer ready", prev, st(19, 100), 0, true, 0},
		{"more ready, soon after the last write", prev, st(30, 100), 300 * time.Millisecond, false, extraStatusInterval - 300*time.Millisecond},
		{"more ready, an interval after the last write", prev, st(30, 100), extraStatusInterval, true, 0},
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
