package plan

import (
	corev1 "k8s.io/api/core/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/updatesort"
)

// PlanUpdate picks the pods to move to the update revision now, in order: pods already preparing an update
// first, then unavailable ones (updating a pod that does not serve costs no availability), then by the
// priority and scatter strategies. It stops at expectedUpdatedReplicas and at maxUnavailable: a CloneSet keeps at least
// replicas - maxUnavailable pods available. Pods named for deletion or preparing deletion are left alone,
// and so is every pod of an OnDelete CloneSet: its users replace pods by deleting them.
func PlanUpdate(in Input) []*corev1.Pod {
	st := in.Strategy
	if st.Paused || st.Type == kruiseappsv1alpha1.OnDeleteCloneSetUpdateStrategyType {
		return nil
	}
	need := st.ExpectedUpdated - countRevision(in.Pods, in.UpdateRevision)
	candidates := updateCandidates(in)
	quota := int32(len(in.Pods)) - unavailable(in.Pods, st.MinReadySeconds, in.Now) - (st.Replicas - st.MaxUnavailable)
	var out []*corev1.Pod
	for _, p := range candidates {
		if int32(len(out)) >= need {
			break
		}
		// A Ready pod serves even before minReadySeconds make it available: taking it down costs quota.
		// A blue-green release relies on this, its inflated minReadySeconds making no pod available.
		if serving, _ := Available(p, 0, in.Now); serving {
			if quota <= 0 {
				continue
			}
			quota--
		}
		out = append(out, p)
	}
	return out
}

func updateCandidates(in Input) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range in.Pods {
		if Revision(p) != in.UpdateRevision && !Specified(p, in.PodsToDelete) && state(p) != kruiseappspub.LifecycleStatePreparingDelete {
			out = append(out, p)
		}
	}
	updatesort.Stable(out, updatesort.NewPriority(in.PriorityStrategy))
	out = updatesort.Scatter(out, in.ScatterStrategy)
	updatesort.Stable(out,
		func(a, b *corev1.Pod) int { return inState(a, b, kruiseappspub.LifecycleStatePreparingUpdate) },
		func(a, b *corev1.Pod) int {
			okA, _ := Available(a, in.Strategy.MinReadySeconds, in.Now)
			okB, _ := Available(b, in.Strategy.MinReadySeconds, in.Now)
			return boolFirst(!okA, !okB)
		},
	)
	return out
}
