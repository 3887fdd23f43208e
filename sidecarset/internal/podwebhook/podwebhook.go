// Package podwebhook keeps the sidecarset module's pod webhook (msidecarset-pod.kb.io) narrow while no
// SidecarSet exists: that webhook is called for every new pod mpod.kb.io leaves, which costs a round trip to
// the manager per pod and is worth it only when some SidecarSet may inject, or when the pod asks for
// container launch priority. Its matchCondition "sidecarsets-or-launch-priority" holds true while the cache
// holds a SidecarSet, and otherwise launchPriorityOnly.
package podwebhook

import (
	"github.com/flotilla-dev/flotilla/webhooks/matchconditions"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// The webhook and condition the controller keeps.
const (
	WebhookName   = "msidecarset-pod.kb.io"
	ConditionName = "sidecarsets-or-launch-priority"
)

// LaunchPriorityOnly is the condition's expression while no SidecarSet exists: pods that ask for container
// launch priority, by the annotation or a container's KRUISE_CONTAINER_PRIORITY.
const LaunchPriorityOnly = "(has(object.metadata.annotations) && " +
	"'apps.kruise.io/container-launch-priority' in object.metadata.annotations) || " +
	"object.spec.containers.exists(c, has(c.env) && c.env.exists(e, e.name == 'KRUISE_CONTAINER_PRIORITY'))"

// ControllerName names the controller and its logs.
const ControllerName = "sidecarset-pod-webhook"

// Conditions are the condition's expression: true while a SidecarSet exists, else LaunchPriorityOnly.
func Conditions(sidecarSetsExist bool) map[matchconditions.Key]string {
	want := LaunchPriorityOnly
	if sidecarSetsExist {
		want = "true"
	}
	return map[matchconditions.Key]string{{Webhook: WebhookName, Condition: ConditionName}: want}
}

// Switch is the controller that keeps the condition in the MutatingWebhookConfiguration named configuration.
func Switch(configuration string) *matchconditions.Switch {
	return &matchconditions.Switch{
		Name: ControllerName, Configuration: configuration,
		Conditions: func(exists []bool) map[matchconditions.Key]string { return Conditions(exists[0]) },
		Kinds:      []matchconditions.Watched{{Kind: &kruiseappsv1alpha1.SidecarSet{}, List: &kruiseappsv1alpha1.SidecarSetList{}}},
	}
}
