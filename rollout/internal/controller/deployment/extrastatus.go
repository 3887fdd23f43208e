package deployment

import (
	"encoding/json"
	"time"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"
)

// extraStatusInterval is the least time between two extra-status writes that only count more ready pods.
// Every annotation write also bumps a Deployment's generation.
const extraStatusInterval = reconcileutil.ProgressInterval

// extraStatusDue decides whether next replaces the written extra status prev now, or after wait: fewer ready
// pods are written at once; anything else (more ready pods, a new partition, one reached, a missing or
// unreadable prev) at most once per extraStatusInterval (since is the time since this controller's last
// write, so a cache that does not show that write yet causes no second one). No controller here reads the
// annotation back (the BatchRelease counts the pods itself), and a partition change is the moment the release
// writes the same Deployment, so an immediate write would only contend with it.
func extraStatusDue(prev string, next rolloutsv1beta1.DeploymentExtraStatus, since time.Duration) (write bool, wait time.Duration) {
	var old rolloutsv1beta1.DeploymentExtraStatus
	readable := prev != "" && json.Unmarshal([]byte(prev), &old) == nil
	switch {
	case readable && old == next, prev == "" && next == (rolloutsv1beta1.DeploymentExtraStatus{}):
		return false, 0
	case readable && next.UpdatedReadyReplicas < old.UpdatedReadyReplicas, since >= extraStatusInterval:
		return true, 0
	default:
		return false, extraStatusInterval - since
	}
}
