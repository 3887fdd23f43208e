package matchconditions

import (
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The pod webhooks whose first conditions PodRoutes keeps; the chart holds them with no route taken
// (Expressions(nil)). mpod.kb.io calls the pod chain for pods an apps.kruise.io workload controls without
// the KruisePodReady gate, and msidecarset-pod.kb.io for the rest: a pod a route takes moves from the second
// to the first, so each pod still reaches the chain at most once.
const (
	PodWebhook       = "mpod.kb.io"
	PodCondition     = "kruise-controlled-without-gate-or-routed-pod"
	SidecarWebhook   = "msidecarset-pod.kb.io"
	SidecarCondition = "not-kruise-controlled-without-gate-or-routed-pod"
)

// PodRoutesControllerName names the routing controller and its logs.
const PodRoutesControllerName = "pod-webhook-routing"

const kruiseWithoutGate = "has(object.metadata.ownerReferences) && " +
	"object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.apiVersion.startsWith('apps.kruise.io/')) && " +
	"!(has(object.spec.readinessGates) && object.spec.readinessGates.exists(g, g.conditionType == 'KruisePodReady'))"

// PodRoute is a module's need of the pod chain: the new pods Pods (a CEL expression over object) selects
// must reach it while some object of Kind exists.
type PodRoute struct {
	Kind client.Object
	List client.ObjectList
	Pods string
}

// PodRoutes gathers the modules' routes at wiring time, so that one controller keeps both conditions for all
// of them (two would overwrite each other's expressions). The zero value has no route.
type PodRoutes struct {
	routes []PodRoute
}

// Add appends route. Call it from a module's setup, before SetupWithManager.
func (r *PodRoutes) Add(route PodRoute) {
	r.routes = append(r.routes, route)
}

// Expressions are mpod.kb.io's condition and msidecarset-pod.kb.io's (its complement) with the pods of the
// taken expressions routed to mpod.kb.io.
func Expressions(taken []string) (pod, sidecar string) {
	pod = kruiseWithoutGate
	if len(taken) > 0 {
		pod = "(" + kruiseWithoutGate + ") || (" + strings.Join(taken, ") || (") + ")"
	}
	return pod, "!(" + pod + ")"
}

// Conditions are both conditions with the routes whose kinds exist taken.
func (r *PodRoutes) Conditions(exists []bool) map[Key]string {
	var taken []string
	for i, route := range r.routes {
		if i < len(exists) && exists[i] {
			taken = append(taken, route.Pods)
		}
	}
	pod, sidecar := Expressions(taken)
	return map[Key]string{
		{Webhook: PodWebhook, Condition: PodCondition}:         pod,
		{Webhook: SidecarWebhook, Condition: SidecarCondition}: sidecar,
	}
}

// SetupWithManager runs the routing controller over the MutatingWebhookConfiguration named configuration;
// without routes (no module needs one) it runs nothing. Call it once, after the modules added theirs.
func (r *PodRoutes) SetupWithManager(mgr ctrl.Manager, configuration string) error {
	if r == nil || len(r.routes) == 0 {
		return nil
	}
	kinds := make([]Watched, 0, len(r.routes))
	for _, route := range r.routes {
		kinds = append(kinds, Watched{Kind: route.Kind, List: route.List})
	}
	s := &Switch{Name: PodRoutesControllerName, Configuration: configuration, Kinds: kinds, Conditions: r.Conditions}
	return s.SetupWithManager(mgr)
}
