package deployment

import (
	"encoding/json"
	"time"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// extraStatusInterval is the least time between two extra-status writes that only count more ready pods.
// Every annotation write bumps a Deployment's generation and wakes every watcher of it; written on each pod,
// a batch of hundreds of pods costs as many.
const extraStatusInterval = time.Second

// extraStatusDue decides whether next replaces the written extra status prev now, or after wait: a new
// partition, fewer ready pods or an unreadable prev are written at once; more ready pods at most once per
// extraStatusInterval (since is the time since the last write). A partition just reached waits its turn
// too: that is the moment the release writes the next partition to the same Deployment, and no controller
// here reads the count back (the BatchRelease counts the pods itself), so an immediate write would only
// contend with the partition patch.
func extraStatusDue(prev string, next rolloutsv1beta1.DeploymentExtraStatus, since time.Duration) (write bool, wait time.Duration) {
	var old rolloutsv1beta1.DeploymentExtraStatus
	if err := json.Unmarshal([]byte(prev), &old); err != nil || prev == "" {
		return true, 0
	}
	switch {
	case old == next:
		return false, 0
	case old.ExpectedUpdatedReplicas != next.ExpectedUpdatedReplicas,
		next.UpdatedReadyReplicas < old.UpdatedReadyReplicas,
		since >= extraStatusInterval:
		return true, 0
	default:
		return false, extraStatusInterval - since
	}
}
