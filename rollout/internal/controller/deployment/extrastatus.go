package deployment

import (
	"encoding/json"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// extraStatusChange tells whether next replaces the written extra status prev, and whether that write only
// reports progress. Only fewer ready pods are written at once; anything else (more ready pods, a new
// partition, one reached, a missing or unreadable prev) is progress, which waits its turn in the progress
// budget the controller shares across its Deployments (reconcileutil.ProgressWrites). No controller here reads
// the annotation back (the BatchRelease counts the pods itself), and each write of it costs more than
// itself: a Deployment's annotations are part of its generation, so kube-controller-manager answers every
// one with a status write and copies it to the new ReplicaSet.
func extraStatusChange(prev string, next rolloutsv1beta1.DeploymentExtraStatus) (write, progressOnly bool) {
	var old rolloutsv1beta1.DeploymentExtraStatus
	readable := prev != "" && json.Unmarshal([]byte(prev), &old) == nil
	switch {
	case readable && old == next, prev == "" && next == (rolloutsv1beta1.DeploymentExtraStatus{}):
		return false, false
	case readable && next.UpdatedReadyReplicas < old.UpdatedReadyReplicas:
		return true, false
	default:
		return true, true
	}
}
