// Package podrouting is the PersistentPodState module's route to the pod webhook. A StatefulSet's pod needs
// the pod chain for its recorded node affinity only when some PersistentPodState may hold its record: so
// while one exists, every pod a StatefulSet (native or Advanced) controls is routed to mpod.kb.io
// (matchconditions.PodRoutes, which other modules share); without a PersistentPodState a StatefulSet's pods
// pay no round trip.
package podrouting

import (
	"github.com/flotilla-dev/flotilla/webhooks/matchconditions"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// StatefulSetPods selects the pods a StatefulSet (native or Advanced) controls.
const StatefulSetPods = "has(object.metadata.ownerReferences) && " +
	"object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.kind == 'StatefulSet' && " +
	"(r.apiVersion == 'apps/v1' || r.apiVersion.startsWith('apps.kruise.io/')))"

// Route routes StatefulSet pods to the pod chain while a PersistentPodState exists.
func Route() matchconditions.PodRoute {
	return matchconditions.PodRoute{Kind: &kruiseappsv1alpha1.PersistentPodState{}, List: &kruiseappsv1alpha1.PersistentPodStateList{},
		Pods: StatefulSetPods}
}
