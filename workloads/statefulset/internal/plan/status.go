package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// Counts are the replica counters of the status, upstream's: Replicas counts every pod of the set (being
// deleted too), Current and Updated only those not being deleted; Ready pods run with a True Ready
// condition; Available ones are moreover Normal and Ready for minReadySeconds.
type Counts struct {
	Replicas, Ready, Available, Current, Updated, UpdatedReady, UpdatedAvailable int32
	// CurrentRevision is the current revision once the update is complete: the update revision when every
	// pod runs it and is Ready.
	CurrentRevision string
	// Wait is how soon a Ready pod passes minReadySeconds (0: none waits).
	Wait time.Duration
}

// Count fills the counters from the set's pods (pods whose names carry no ordinal of the set are left out).
func Count(in Input) Counts {
	c := Counts{CurrentRevision: in.CurrentRevision}
	for _, p := range in.Pods {
		if Ordinal(in.Name, p.Name) >= 0 {
			c.add(p, in)
		}
	}
	if !in.Strategy.OnDelete && c.Updated == c.Replicas && c.Ready == c.Replicas {
		c.CurrentRevision, c.Current = in.UpdateRevision, c.Updated
	}
	return c
}

func (c *Counts) add(p *corev1.Pod, in Input) {
	c.Replicas++
	updated := Revision(p) == in.UpdateRevision
	if RunningAndReady(p) {
		available, wait := Available(p, in.Strategy.MinReadySeconds, in.Now)
		if wait > 0 && (c.Wait == 0 || wait < c.Wait) {
			c.Wait = wait
		}
		c.Ready++
		c.Available += b2i(available)
		c.UpdatedReady += b2i(updated)
		c.UpdatedAvailable += b2i(updated && available)
	}
	if !Terminating(p) {
		c.Current += b2i(Revision(p) == in.CurrentRevision)
		c.Updated += b2i(updated)
	}
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// VolumeClaims counts, for each volumeClaimTemplate, the pods (by ordinal) whose claim is compatible with
// it, and compatible with its capacity reached; claims maps claim names to the set's claims. Missing and
// terminating claims count for neither. Without templates the list is empty, as upstream reports it.
func VolumeClaims(set string, templates []corev1.PersistentVolumeClaim, ordinals []int32,
	claims map[string]*corev1.PersistentVolumeClaim) []kruiseappsv1beta1.VolumeClaimStatus {
	out := make([]kruiseappsv1beta1.VolumeClaimStatus, 0, len(templates))
	for i := range templates {
		s := kruiseappsv1beta1.VolumeClaimStatus{VolumeClaimName: templates[i].Name}
		for _, n := range ordinals {
			c := claims[ClaimName(templates[i].Name, set, n)]
			if c == nil || c.DeletionTimestamp != nil {
				continue
			}
			compatible, ready := CompatibleAndReady(c, &templates[i])
			s.CompatibleReplicas += b2i(compatible)
			s.CompatibleReadyReplicas += b2i(compatible && ready)
		}
		out = append(out, s)
	}
	return out
}
