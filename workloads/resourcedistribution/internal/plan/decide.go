package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Reasons of the failures the planner itself finds: upstream's.
const (
	ConflictReason  = "conflict with existing resources because of the same namespace, group, version, kind and name"
	NotExistsReason = "namespace not found or is terminating"
)

// Input is what one reconcile of a ResourceDistribution knows.
type Input struct {
	RD       *kruiseappsv1alpha1.ResourceDistribution
	Resource *Resource
	// Namespaces are the existing namespaces by name.
	Namespaces map[string]Namespace
	// Targets are the namespaces to distribute to (Targets).
	Targets []string
	// Existing holds, for each target namespace, the object of the resource's kind and name there, if any.
	Existing map[string]client.Object
	// ReadFailed holds the target namespaces whose object could not be read, with the error.
	ReadFailed map[string]error
	// Owned are the Secrets and ConfigMaps the ResourceDistribution controls, in any namespace.
	Owned []client.Object
	Now   time.Time
}

// Plan is what to do, in the order to do it, and the failures found before doing anything.
type Plan struct {
	Create, Update, Delete []client.Object
	Failures               []Failure
}

// Failure is one namespace's failure, under the condition type that reports it.
type Failure struct {
	Namespace string
	Type      kruiseappsv1alpha1.ResourceDistributionConditionType
	Reason    string
}

// Decide plans one reconcile: a copy for each target namespace that exists and has none, an update of each
// of the ResourceDistribution's copies there that is not Current, nothing over an object it does not own
// (a conflict), and the deletion of its copies anywhere else.
func Decide(in Input) Plan {
	var p Plan
	for _, ns := range in.Targets {
		p.target(in, ns)
	}
	wanted := map[string]bool{}
	for _, ns := range in.Targets {
		wanted[ns] = true
	}
	for _, obj := range in.Owned {
		if !wanted[obj.GetNamespace()] || !sameObject(in.Resource, obj) {
			p.retire(in, obj)
		}
	}
	return p
}

// target plans namespace ns, one of the targets.
func (p *Plan) target(in Input, ns string) {
	if n, ok := in.Namespaces[ns]; !ok || n.Terminating {
		p.fail(ns, kruiseappsv1alpha1.ResourceDistributionNamespaceNotExists, NotExistsReason)
		return
	}
	if err := in.ReadFailed[ns]; err != nil {
		p.fail(ns, kruiseappsv1alpha1.ResourceDistributionGetResourceFailed, err.Error())
		return
	}
	old := in.Existing[ns]
	switch {
	case old == nil:
		p.Create = append(p.Create, NewCopy(in.RD, in.Resource, ns, nil, in.Now))
	case Controller(old) != in.RD.Name:
		p.fail(ns, kruiseappsv1alpha1.ResourceDistributionConflictOccurred, ConflictReason)
	case !Current(in.RD, in.Resource, old):
		p.Update = append(p.Update, NewCopy(in.RD, in.Resource, ns, old, in.Now))
	}
}

// retire deletes a copy no longer wanted, unless its namespace is going anyway.
func (p *Plan) retire(in Input, obj client.Object) {
	if n, ok := in.Namespaces[obj.GetNamespace()]; ok && !n.Terminating && obj.GetDeletionTimestamp() == nil {
		p.Delete = append(p.Delete, obj)
	}
}

func (p *Plan) fail(ns string, t kruiseappsv1alpha1.ResourceDistributionConditionType, reason string) {
	p.Failures = append(p.Failures, Failure{Namespace: ns, Type: t, Reason: reason})
}

// sameObject tells whether obj, a copy, has the resource's kind and name: a copy of an earlier name or kind
// (the webhook forbids the change, but it may not have been running) is not wanted anywhere.
func sameObject(res *Resource, obj client.Object) bool {
	return obj.GetName() == res.Name() && kindOf(obj) == res.Kind
}

// kindOf is obj's kind by its Go type: objects read from a typed cache carry no kind.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Secret:
		return KindSecret
	case *corev1.ConfigMap:
		return KindConfigMap
	}
	return ""
}
