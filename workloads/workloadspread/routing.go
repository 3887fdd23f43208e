package workloadspread

import (
	"github.com/flotilla-dev/flotilla/webhooks/matchconditions"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// SpreadablePods selects the new pods whose controller may be a WorkloadSpread target, or a Deployment's
// ReplicaSet: those a ReplicaSet, StatefulSet, Job or apps.kruise.io workload controls. Which of them a
// WorkloadSpread targets is known only from the cache, so the webhook decides.
const SpreadablePods = "has(object.metadata.ownerReferences) && " +
	"object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && (r.apiVersion.startsWith('apps.kruise.io/') || " +
	"(r.apiVersion == 'apps/v1' && (r.kind == 'ReplicaSet' || r.kind == 'StatefulSet')) || (r.apiVersion == 'batch/v1' && r.kind == 'Job')))"

// PodRoute routes those pods to the pod chain while a WorkloadSpread exists; without one they pay no round
// trip.
func PodRoute() matchconditions.PodRoute {
	return matchconditions.PodRoute{Kind: &kruiseappsv1alpha1.WorkloadSpread{}, List: &kruiseappsv1alpha1.WorkloadSpreadList{},
		Pods: SpreadablePods}
}
