package admission

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

// CRDCascadingGate is the feature gate without which a CustomResourceDefinition labelled Cascading cannot be
// deleted; the refusal names it.
const CRDCascadingGate = "DeletionProtectionForCRDCascadingGate"

// Options are the module's feature gates, resolved at wiring time.
type Options struct {
	// Enabled is ResourcesDeletionProtection: off, every deletion and every label value is allowed, as upstream.
	Enabled bool
	// CRDCascading is DeletionProtectionForCRDCascadingGate (and ResourcesDeletionProtection).
	CRDCascading bool
}

// Target is the object a deletion request names, as the API server stores it.
type Target struct {
	// Kind is the request's kind, e.g. Deployment; Group tells an Advanced StatefulSet from a StatefulSet.
	Group, Kind     string
	Namespace, Name string
	Labels          map[string]string
	// Deleting: the object already has a deletionTimestamp; deleting it again changes nothing.
	Deleting bool
	// Replicas is a workload's spec.replicas.
	Replicas *int32
	// CustomResources is, for a CustomResourceDefinition, the resource its objects are listed under.
	CustomResources schema.GroupVersionResource
}

// Need is what a deletion's decision needs counted first.
type Need int

const (
	// NeedNothing: the label alone decides.
	NeedNothing Need = iota
	// NeedPodsAndClaims: a Cascading namespace's active pods and Bound PersistentVolumeClaims.
	NeedPodsAndClaims
	// NeedCustomResources: a Cascading CustomResourceDefinition's remaining custom resources.
	NeedCustomResources
)

// Dependents are what still exists that a Cascading rule protects: only the counts Needs asked for are read.
type Dependents struct {
	ActivePods, BoundClaims, CustomResources int
}

// class is how a kind is protected.
type class int

const (
	unprotected class = iota
	workload          // Cascading: spec.replicas > 0
	namespace         // Cascading: active pods or Bound claims in it
	crd               // Cascading: custom resources left, with CRDCascadingGate
	alwaysOnly        // Cascading protects nothing
)

var classes = map[schema.GroupKind]class{
	{Group: "", Kind: "Namespace"}:                                    namespace,
	{Group: "", Kind: "Service"}:                                      alwaysOnly,
	{Group: "networking.k8s.io", Kind: "Ingress"}:                     alwaysOnly,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: crd,
	{Group: "apps", Kind: "Deployment"}:                               workload,
	{Group: "apps", Kind: "ReplicaSet"}:                               workload,
	{Group: "apps", Kind: "StatefulSet"}:                              workload,
	{Group: "apps.kruise.io", Kind: "CloneSet"}:                       workload,
	{Group: "apps.kruise.io", Kind: "StatefulSet"}:                    workload,
	{Group: "apps.kruise.io", Kind: "UnitedDeployment"}:               workload,
}

func classOf(group, kind string) class {
	return classes[schema.GroupKind{Group: group, Kind: kind}]
}

// Protects reports whether objects of a group and kind are ever protected.
func Protects(group, kind string) bool {
	return classOf(group, kind) != unprotected
}

// Needs says what Decide needs counted for t: only a Cascading namespace or CustomResourceDefinition needs
// anything, and nothing while the gates leave the deletion to the label alone.
func Needs(t Target, o Options) Need {
	if !o.Enabled || t.Deleting || t.Labels[kruisepolicyv1alpha1.DeletionProtectionKey] != kruisepolicyv1alpha1.DeletionProtectionTypeCascading {
		return NeedNothing
	}
	switch classOf(t.Group, t.Kind) {
	case namespace:
		return NeedPodsAndClaims
	case crd:
		if o.CRDCascading {
			return NeedCustomResources
		}
	}
	return NeedNothing
}

// Refusal is a deletion the label forbids.
type Refusal struct {
	// Protection is the label's value.
	Protection string
	// What says what protects the object: what still exists, or why it cannot be known.
	What string
	// Subject is the object, e.g. "namespace ns-1".
	Subject string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("forbidden by ResourcesDeletionProtection: %s %s, label %s=%s", r.Subject, r.What,
		kruisepolicyv1alpha1.DeletionProtectionKey, r.Protection)
}

// Decide refuses deleting t when its label forbids it, given what Needs asked to be counted (d). An object
// already being deleted, an unknown or missing label value, and anything while the gate is off are allowed,
// as upstream.
func Decide(t Target, o Options, d Dependents) *Refusal {
	value := t.Labels[kruisepolicyv1alpha1.DeletionProtectionKey]
	c := classOf(t.Group, t.Kind)
	if !o.Enabled || t.Deleting || c == unprotected {
		return nil
	}
	var what string
	switch value {
	case kruisepolicyv1alpha1.DeletionProtectionTypeAlways:
		what = "is protected"
	case kruisepolicyv1alpha1.DeletionProtectionTypeCascading:
		what = cascading(c, t, o, d)
	}
	if what == "" {
		return nil
	}
	return &Refusal{Protection: value, What: what, Subject: subject(t)}
}

// cascading says what a Cascading rule still protects; "" when nothing is left.
func cascading(c class, t Target, o Options, d Dependents) string {
	switch c {
	case workload:
		if t.Replicas != nil && *t.Replicas > 0 {
			return "has " + count(int(*t.Replicas), "replica", "replicas")
		}
	case namespace:
		return namespaceDependents(d)
	case crd:
		if !o.CRDCascading {
			return "cannot be checked for custom resources without the feature gate " + CRDCascadingGate
		}
		if d.CustomResources > 0 {
			return "has " + count(d.CustomResources, "custom resource", "custom resources")
		}
	}
	return ""
}

func namespaceDependents(d Dependents) string {
	var left []string
	if d.ActivePods > 0 {
		left = append(left, count(d.ActivePods, "active pod", "active pods"))
	}
	if d.BoundClaims > 0 {
		left = append(left, count(d.BoundClaims, "Bound PersistentVolumeClaim", "Bound PersistentVolumeClaims"))
	}
	if len(left) == 0 {
		return ""
	}
	return "has " + strings.Join(left, " and ")
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// subject names t as the refusal does: its kind in lower case, and namespace/name or name.
func subject(t Target) string {
	name := t.Name
	if t.Namespace != "" {
		name = t.Namespace + "/" + t.Name
	}
	return strings.ToLower(t.Kind) + " " + name
}

// Unchecked is the refusal of a deletion whose Cascading rule could not be checked (err says why): protection
// fails closed, as upstream's.
func Unchecked(t Target, err error) error {
	return fmt.Errorf("forbidden by ResourcesDeletionProtection: %s could not be checked, label %s=%s: %w", subject(t),
		kruisepolicyv1alpha1.DeletionProtectionKey, t.Labels[kruisepolicyv1alpha1.DeletionProtectionKey], err)
}
