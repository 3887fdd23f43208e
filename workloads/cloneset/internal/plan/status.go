package plan

import (
	"time"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Counts fills the replica counters and revisions of a CloneSet's status from its active pods. The current
// revision becomes the update revision once every pod runs it and the CloneSet has all its replicas.
// requeue is the shortest wait for a Ready pod to pass minReadySeconds (0 when none waits).
func Counts(in Input, status *kruiseappsv1alpha1.CloneSetStatus) (requeue time.Duration) {
	st := in.Strategy
	c := kruiseappsv1alpha1.CloneSetStatus{Replicas: int32(len(in.Pods)), ExpectedUpdatedReplicas: st.ExpectedUpdated} //nolint:gosec // pod counts fit
	for _, p := range in.Pods {
		updated := Revision(p) == in.UpdateRevision
		ready, _ := Ready(p)
		available, wait := Available(p, st.MinReadySeconds, in.Now)
		if wait > 0 && (requeue == 0 || wait < requeue) {
			requeue = wait
		}
		c.ReadyReplicas += b2i(ready)
		c.AvailableReplicas += b2i(available)
		c.UpdatedReplicas += b2i(updated)
		c.UpdatedReadyReplicas += b2i(updated && ready)
		c.UpdatedAvailableReplicas += b2i(updated && available)
	}
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas = c.Replicas, c.ReadyReplicas, c.AvailableReplicas
	status.UpdatedReplicas, status.UpdatedReadyReplicas = c.UpdatedReplicas, c.UpdatedReadyReplicas
	status.UpdatedAvailableReplicas, status.ExpectedUpdatedReplicas = c.UpdatedAvailableReplicas, c.ExpectedUpdatedReplicas
	status.UpdateRevision, status.CurrentRevision = in.UpdateRevision, in.CurrentRevision
	if c.UpdatedReplicas == c.Replicas && c.Replicas == st.Replicas || in.CurrentRevision == "" {
		status.CurrentRevision = in.UpdateRevision
	}
	return requeue
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}
