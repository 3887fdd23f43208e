// Package podrouting keeps the pods of StatefulSets off the pod webhook while no PersistentPodState exists.
// The pod chain is called through mpod.kb.io for pods an apps.kruise.io workload controls without the
// KruisePodReady gate, and through msidecarset-pod.kb.io for the rest (while SidecarSets exist). A
// StatefulSet's pod needs the chain for its recorded node affinity only when some PersistentPodState may
// hold its record: so while one exists, the controller here widens mpod.kb.io's first matchCondition to
// every pod a StatefulSet (native or Advanced) controls and narrows msidecarset-pod.kb.io's to the
// complement, in one patch of the configuration; otherwise it puts back the chart's conditions. Each pod
// reaches the chain once either way, and without PersistentPodStates a StatefulSet's pods pay no round trip.
package podrouting

import (
	"github.com/flotilla-dev/flotilla/webhooks/matchconditions"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// ControllerName names the controller and its logs.
const ControllerName = "persistentpodstate-pod-routing"

// The webhooks and conditions the controller keeps; the chart holds them with Expressions(false).
const (
	PodWebhook       = "mpod.kb.io"
	PodCondition     = "kruise-controlled-without-gate-or-statefulset-pod"
	SidecarWebhook   = "msidecarset-pod.kb.io"
	SidecarCondition = "not-kruise-controlled-without-gate-or-statefulset-pod"
)

const (
	kruiseWithoutGate = "has(object.metadata.ownerReferences) && " +
		"object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.apiVersion.startsWith('apps.kruise.io/')) && " +
		"!(has(object.spec.readinessGates) && object.spec.readinessGates.exists(g, g.conditionType == 'KruisePodReady'))"
	statefulSetPod = "has(object.metadata.ownerReferences) && " +
		"object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.kind == 'StatefulSet' && " +
		"(r.apiVersion == 'apps/v1' || r.apiVersion.startsWith('apps.kruise.io/')))"
)

// Expressions are the two conditions: mpod.kb.io's, and msidecarset-pod.kb.io's (its complement), with
// StatefulSet pods (withStatefulSets) or without.
func Expressions(withStatefulSets bool) (pod, sidecar string) {
	pod = kruiseWithoutGate
	if withStatefulSets {
		pod = "(" + kruiseWithoutGate + ") || (" + statefulSetPod + ")"
	}
	return pod, "!(" + pod + ")"
}

// Conditions are both conditions at Expressions(persistentPodStatesExist).
func Conditions(persistentPodStatesExist bool) map[matchconditions.Key]string {
	pod, sidecar := Expressions(persistentPodStatesExist)
	return map[matchconditions.Key]string{
		{Webhook: PodWebhook, Condition: PodCondition}:         pod,
		{Webhook: SidecarWebhook, Condition: SidecarCondition}: sidecar,
	}
}

// Switch is the controller that keeps both conditions in the MutatingWebhookConfiguration named
// configuration, in one patch. A webhook or condition the configuration does not have (a module not
// installed, an older chart) is left out.
func Switch(configuration string) *matchconditions.Switch {
	return &matchconditions.Switch{
		Name: ControllerName, Configuration: configuration, Conditions: Conditions,
		Kind: &kruiseappsv1alpha1.PersistentPodState{}, List: &kruiseappsv1alpha1.PersistentPodStateList{},
	}
}
