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
	"encoding/json"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

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

// Same compares expressions as the API server evaluates them: the chart folds them over lines.
func Same(a, b string) bool {
	return strings.Join(strings.Fields(a), "") == strings.Join(strings.Fields(b), "")
}

// Patch is the JSON patch that sets both conditions to Expressions(withStatefulSets), testing that each is
// still where it was read; ok is false when nothing is to change. A webhook or condition the configuration
// does not have (a module not installed, an older chart) is left out.
func Patch(cfg *admissionregistrationv1.MutatingWebhookConfiguration, withStatefulSets bool) ([]byte, bool) {
	pod, sidecar := Expressions(withStatefulSets)
	want := map[string][2]string{PodWebhook: {PodCondition, pod}, SidecarWebhook: {SidecarCondition, sidecar}}
	var ops []map[string]string
	for i, w := range cfg.Webhooks {
		target, ok := want[w.Name]
		if !ok {
			continue
		}
		for j, c := range w.MatchConditions {
			if c.Name != target[0] || Same(c.Expression, target[1]) {
				continue
			}
			cond := fmt.Sprintf("/webhooks/%d/matchConditions/%d", i, j)
			ops = append(ops,
				map[string]string{"op": "test", "path": fmt.Sprintf("/webhooks/%d/name", i), "value": w.Name},
				map[string]string{"op": "test", "path": cond + "/name", "value": c.Name},
				map[string]string{"op": "replace", "path": cond + "/expression", "value": target[1]})
		}
	}
	if len(ops) == 0 {
		return nil, false
	}
	patch, _ := json.Marshal(ops) // strings always marshal
	return patch, true
}
