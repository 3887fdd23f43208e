package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Input is what one reconcile of a UnitedDeployment knows.
type Input struct {
	UD *kruiseappsv1alpha1.UnitedDeployment
	// Revision names the UnitedDeployment's newest revision: every subset workload should carry it.
	Revision string
	// Owned are the workloads, of any of the four kinds, the UnitedDeployment controls.
	Owned []client.Object
	// Capacity is what the adaptive strategy learnt of each subset; nil under the fixed strategy.
	Capacity map[string]Capacity
}

// Change is one user-visible change of a subset's workload, for events.
type Change struct {
	Subset, Reason, Message string
	// Object is the workload changed: events name it as their related object, which also keeps the events
	// of one reconcile about several subsets apart.
	Object client.Object
}

// Plan is what to write so that every subset runs its workload as the spec says.
type Plan struct {
	Kind                 Kind
	Replicas, Partitions map[string]int32
	// Create, Update and Delete are the workloads to write, Update's carrying the resourceVersion read.
	Create, Update, Delete []client.Object
	// Kept are the subsets' existing workloads as read; Rolled the subsets whose workload the plan moves to
	// another revision (their counts of updated pods are stale). Changes describe the plan.
	Kept    map[string]client.Object
	Rolled  map[string]bool
	Changes []Change
}

// Decide plans the subsets' workloads: one per subset of the topology, of the template's kind, with its
// allocated replicas and partition; workloads of subsets gone from the topology, of another kind, or
// duplicating a subset's are deleted.
func Decide(in Input) (Plan, error) {
	k, err := KindOf(in.UD)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Kind: k, Kept: map[string]client.Object{}, Rolled: map[string]bool{}}
	p.sortOwned(in)
	current := map[string]int32{}
	for name, obj := range p.Kept {
		current[name], _, _ = k.read(obj)
	}
	if p.Replicas, err = Allocate(in.UD, current, in.Capacity); err != nil {
		return Plan{}, err
	}
	p.Partitions = Partitions(in.UD, p.Replicas)
	for i := range in.UD.Spec.Topology.Subsets {
		if err := p.subset(in, &in.UD.Spec.Topology.Subsets[i]); err != nil {
			return Plan{}, err
		}
	}
	return p, nil
}

// sortOwned keeps one workload of the template's kind per subset of the topology and deletes the others.
// Of duplicates it keeps the one named as this controller names it, else the oldest (upstream keeps any one).
func (p *Plan) sortOwned(in Input) {
	wanted := map[string]bool{}
	for _, s := range in.UD.Spec.Topology.Subsets {
		wanted[s.Name] = true
	}
	for _, obj := range sortedByAge(in.Owned) {
		subset, labelled := obj.GetLabels()[kruiseappsv1alpha1.SubSetNameLabelKey]
		switch {
		case !isKind(p.Kind, obj) || (labelled && !wanted[subset]):
			p.remove(obj, subset)
		case !labelled:
			// Not a subset workload: left alone, as upstream.
		case p.Kept[subset] == nil:
			p.Kept[subset] = obj
		case obj.GetName() == WorkloadName(in.UD, subset):
			p.remove(p.Kept[subset], subset)
			p.Kept[subset] = obj
		default:
			p.remove(obj, subset)
		}
	}
}

func (p *Plan) remove(obj client.Object, subset string) {
	p.Delete = append(p.Delete, obj)
	p.Changes = append(p.Changes, Change{Subset: subset, Reason: ReasonDelete, Object: obj,
		Message: fmt.Sprintf("Deleted %s %s of subset %s", kindName(obj), obj.GetName(), subset)})
}

// subset plans one subset's workload: create it, or update it when its revision, replicas, partition or patch
// differ from the plan's (the fields upstream compares).
func (p *Plan) subset(in Input, s *kruiseappsv1alpha1.Subset) error {
	d := Desired{Subset: s, Revision: in.Revision, Replicas: p.Replicas[s.Name], Partition: p.Partitions[s.Name]}
	want, err := Render(p.Kind, in.UD, d)
	if err != nil {
		return fmt.Errorf("subset %s: %w", s.Name, err)
	}
	have := p.Kept[s.Name]
	if have == nil {
		p.Create = append(p.Create, want)
		p.Changes = append(p.Changes, Change{Subset: s.Name, Reason: ReasonCreate, Object: want,
			Message: fmt.Sprintf("Created %s %s for subset %s with %d replicas", p.Kind.Name(), want.GetName(), s.Name, d.Replicas)})
		return nil
	}
	replicas, partition, _ := p.Kind.read(have)
	sameRevision := have.GetLabels()[kruiseappsv1alpha1.ControllerRevisionHashLabelKey] == d.Revision
	if sameRevision && replicas == d.Replicas && partition == d.Partition &&
		have.GetAnnotations()[kruiseappsv1alpha1.AnnotationSubsetPatchKey] == string(s.Patch.Raw) {
		return nil
	}
	adopt(want, have)
	p.Update = append(p.Update, want)
	p.Rolled[s.Name] = !sameRevision
	if replicas != d.Replicas {
		p.Changes = append(p.Changes, Change{Subset: s.Name, Reason: ReasonScale, Object: want,
			Message: fmt.Sprintf("Scaled %s %s of subset %s from %d to %d replicas", p.Kind.Name(), have.GetName(), s.Name, replicas, d.Replicas)})
	}
	return nil
}

// adopt makes want an update of have: have's identity, finalizers and owners, its labels and annotations
// under want's.
func adopt(want, have client.Object) {
	want.SetName(have.GetName())
	want.SetUID(have.GetUID())
	want.SetResourceVersion(have.GetResourceVersion())
	want.SetFinalizers(have.GetFinalizers())
	want.SetOwnerReferences(have.GetOwnerReferences())
	want.SetLabels(merged(have.GetLabels(), want.GetLabels()))
	want.SetAnnotations(merged(have.GetAnnotations(), want.GetAnnotations()))
}

// Reasons of the UnitedDeployment's events about its subsets' workloads, one event per subset changed
// (upstream records one SuccessfulSubsetsUpdate event per batch of creates or deletes).
const (
	ReasonCreate = "SuccessfulCreateSubset"
	ReasonDelete = "SuccessfulDeleteSubset"
	ReasonScale  = "SuccessfulScaleSubset"
)

func isKind(k Kind, obj client.Object) bool {
	return fmt.Sprintf("%T", k.New()) == fmt.Sprintf("%T", obj)
}

func kindName(obj client.Object) string {
	for _, k := range Kinds {
		if isKind(k, obj) {
			return k.Name()
		}
	}
	return "workload"
}

func sortedByAge(objs []client.Object) []client.Object {
	out := slices.Clone(objs)
	slices.SortStableFunc(out, func(a, b client.Object) int {
		if c := a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time); c != 0 {
			return c
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	return out
}

// SubsetNames are the plan's subsets in a stable order.
func (p *Plan) SubsetNames() []string {
	return slices.Sorted(maps.Keys(p.Replicas))
}
