package plan

import (
	"errors"
	"maps"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// existing is the workload a previous plan created for the subset, at revision, with 2 replicas and no
// partition, reporting counts.
func existing(t *testing.T, u *kruiseappsv1alpha1.UnitedDeployment, subset, revision string, c Counts) *kruiseappsv1alpha1.CloneSet {
	t.Helper()
	for i := range u.Spec.Topology.Subsets {
		if s := &u.Spec.Topology.Subsets[i]; s.Name == subset {
			obj, err := Render(cloneSetKind{}, u, Desired{Subset: s, Revision: revision, Replicas: 2})
			if err != nil {
				t.Fatal(err)
			}
			cs := obj.(*kruiseappsv1alpha1.CloneSet)
			cs.ResourceVersion, cs.Finalizers = "7", []string{"keep"}
			cs.Status = kruiseappsv1alpha1.CloneSetStatus{Replicas: c.Replicas, ReadyReplicas: c.Ready, UpdatedReplicas: c.Updated, UpdatedReadyReplicas: c.UpdatedReady}
			return cs
		}
	}
	t.Fatalf("no subset %s", subset)
	return nil
}

func names(objs []client.Object) map[string]bool {
	out := map[string]bool{}
	for _, o := range objs {
		out[o.GetName()] = true
	}
	return out
}

func TestDecideCreatesEverySubset(t *testing.T) {
	u := ud(n(6), sub("a"), sub("b"), sub("c"))
	p, err := Decide(Input{UD: u, Revision: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Create) != 3 || len(p.Update)+len(p.Delete) != 0 || len(p.Changes) != 3 {
		t.Fatalf("plan %+v", p)
	}
	for _, obj := range p.Create {
		if cs := obj.(*kruiseappsv1alpha1.CloneSet); *cs.Spec.Replicas != 2 {
			t.Errorf("%s: %d replicas", cs.Name, *cs.Spec.Replicas)
		}
	}
}

// Nothing to write when every workload matches; a new total, revision, partition or patch updates exactly
// the workloads it changes, keeping what others put on them.
func TestDecideUpdates(t *testing.T) {
	u := ud(n(6), sub("a"), sub("b"), sub("c"))
	owned := func() []client.Object {
		return []client.Object{existing(t, u, "a", "r1", Counts{}), existing(t, u, "b", "r1", Counts{}), existing(t, u, "c", "r1", Counts{})}
	}
	if p, err := Decide(Input{UD: u, Revision: "r1", Owned: owned()}); err != nil || len(p.Create)+len(p.Update)+len(p.Delete) != 0 {
		t.Fatalf("steady state: %+v (%v)", p, err)
	}
	scaled := u.DeepCopy()
	scaled.Spec.Replicas = n(7)
	p, err := Decide(Input{UD: scaled, Revision: "r1", Owned: owned()})
	if err != nil || len(p.Update) != 1 || len(p.Changes) != 1 || p.Changes[0].Reason != ReasonScale {
		t.Fatalf("scale 6 -> 7: %+v (%v)", p, err)
	}
	cs := p.Update[0].(*kruiseappsv1alpha1.CloneSet)
	if *cs.Spec.Replicas != 3 || cs.ResourceVersion != "7" || cs.Finalizers[0] != "keep" || p.Rolled[cs.Labels[kruiseappsv1alpha1.SubSetNameLabelKey]] {
		t.Errorf("update %+v", cs.ObjectMeta)
	}
}

// A new revision updates every workload with its partition; a new patch only its subset's.
func TestDecideRevisionAndPatch(t *testing.T) {
	u := ud(n(6), sub("a"), sub("b"), sub("c"))
	owned := func() []client.Object {
		return []client.Object{existing(t, u, "a", "r1", Counts{}), existing(t, u, "b", "r1", Counts{}), existing(t, u, "c", "r1", Counts{})}
	}
	manual := u.DeepCopy()
	manual.Spec.UpdateStrategy = kruiseappsv1alpha1.UnitedDeploymentUpdateStrategy{Type: kruiseappsv1alpha1.ManualUpdateStrategyType,
		ManualUpdate: &kruiseappsv1alpha1.ManualUpdate{Partitions: map[string]int32{"a": 2, "b": 1}}}
	p, err := Decide(Input{UD: manual, Revision: "r2", Owned: owned()})
	if err != nil || len(p.Update) != 3 || len(p.Changes) != 0 || !maps.Equal(p.Partitions, map[string]int32{"a": 2, "b": 1, "c": 0}) {
		t.Fatalf("new revision: %+v (%v)", p, err)
	}
	for _, obj := range p.Update {
		if obj.GetLabels()[kruiseappsv1alpha1.ControllerRevisionHashLabelKey] != "r2" || !p.Rolled[obj.GetLabels()[kruiseappsv1alpha1.SubSetNameLabelKey]] {
			t.Errorf("%s labels %v", obj.GetName(), obj.GetLabels())
		}
	}
	patched := u.DeepCopy()
	patched.Spec.Topology.Subsets[1].Patch = runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"b":"1"}}}`)}
	if p, err := Decide(Input{UD: patched, Revision: "r1", Owned: owned()}); err != nil || !names(p.Update)[WorkloadName(u, "b")] || len(p.Update) != 1 {
		t.Errorf("new patch: %+v (%v)", p.Update, err)
	}
}

// A subset gone from the topology, a workload of another kind and a duplicate are deleted; an owned
// workload without the subset label is left alone.
func TestDecideDeletes(t *testing.T) {
	u := ud(n(4), sub("a"), sub("b"), sub("gone"))
	a := existing(t, u, "a", "r1", Counts{})
	gone := existing(t, u, "gone", "r1", Counts{})
	dup := existing(t, u, "a", "r1", Counts{})
	dup.Name, dup.CreationTimestamp = "web-a-older", metav1.NewTime(time.Unix(10, 0))
	unlabelled := existing(t, u, "b", "r1", Counts{})
	unlabelled.Name, unlabelled.Labels = "other", nil
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web-b-x", Labels: map[string]string{kruiseappsv1alpha1.SubSetNameLabelKey: "b"}}}
	u.Spec.Topology.Subsets = u.Spec.Topology.Subsets[:2]
	p, err := Decide(Input{UD: u, Revision: "r1", Owned: []client.Object{a, gone, dup, unlabelled, deployment}})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(p.Delete); len(got) != 3 || !got[gone.Name] || !got["web-a-older"] || !got["web-b-x"] {
		t.Errorf("deletes %v", got)
	}
	if got := names(p.Create); len(got) != 1 || !got[WorkloadName(u, "b")] {
		t.Errorf("creates %v", got)
	}
	if p.Kept["a"] != a {
		t.Errorf("kept %v, want the workload named as the controller names it", p.Kept["a"].GetName())
	}
}

func TestDecideRefusesBadSpecs(t *testing.T) {
	u := ud(n(1), fixed("a", i(2)), sub("b"))
	if _, err := Decide(Input{UD: u, Revision: "r"}); err == nil {
		t.Error("fixed replicas above the total planned")
	}
	u.Spec.Template = kruiseappsv1alpha1.SubsetTemplate{}
	if _, err := Decide(Input{UD: u, Revision: "r"}); !errors.Is(err, ErrNoTemplate) {
		t.Errorf("no template: %v", err)
	}
}

func TestStatus(t *testing.T) {
	u := ud(n(4), sub("a"), sub("b"))
	u.Status.CurrentRevision = "r1"
	u.Status.Conditions = []kruiseappsv1alpha1.UnitedDeploymentCondition{
		{Type: kruiseappsv1alpha1.SubsetFailure, Status: corev1.ConditionTrue},
		{Type: kruiseappsv1alpha1.SubsetUpdated, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Unix(5, 0))},
	}
	owned := []client.Object{existing(t, u, "a", "r2", Counts{2, 2, 2, 2}), existing(t, u, "b", "r2", Counts{2, 2, 1, 1})}
	p, err := Decide(Input{UD: u, Revision: "r2", Owned: owned})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Unix(100, 0))
	s := Status(StatusInput{UD: u, Plan: p, Revision: "r2", Selector: "app=web", Now: now})
	if s.Replicas != 4 || s.ReadyReplicas != 4 || s.UpdatedReplicas != 3 || s.UpdatedReadyReplicas != 3 || s.ObservedGeneration != 3 ||
		s.CurrentRevision != "r1" || s.UpdateStatus.UpdatedRevision != "r2" || s.LabelSelector != "app=web" || len(s.SubsetStatuses) != 2 ||
		s.SubsetReplicas["a"] != 2 || s.SubsetStatuses[1].ReadyReplicas != 2 {
		t.Fatalf("status %+v", s)
	}
	expectConditions(t, s)
}

func expectConditions(t *testing.T, s kruiseappsv1alpha1.UnitedDeploymentStatus) {
	t.Helper()
	byType := conditionMap(s)
	if _, failing := byType[kruiseappsv1alpha1.SubsetFailure]; failing || byType[kruiseappsv1alpha1.SubsetUpdated].LastTransitionTime.Unix() != 5 ||
		byType[kruiseappsv1alpha1.UnitedDeploymentUpdated].Status != corev1.ConditionFalse || byType[kruiseappsv1alpha1.SubsetProvisioned].Status != corev1.ConditionTrue {
		t.Errorf("conditions %+v", s.Conditions)
	}
}

// Once every pod is updated and ready the new revision is current; a failure shows.
func TestStatusRolledOutWithFailure(t *testing.T) {
	u := ud(n(4), sub("a"), sub("b"))
	u.Status.CurrentRevision = "r1"
	owned := []client.Object{existing(t, u, "a", "r2", Counts{2, 2, 2, 2}), existing(t, u, "b", "r2", Counts{2, 2, 2, 2})}
	now := metav1.NewTime(time.Unix(100, 0))
	p, _ := Decide(Input{UD: u, Revision: "r2", Owned: owned})
	s := Status(StatusInput{UD: u, Plan: p, Revision: "r2", Failure: errors.New("quota"), Now: now})
	byType := conditionMap(s)
	if s.ObservedGeneration != 0 {
		t.Errorf("observedGeneration %d written although writing the plan failed", s.ObservedGeneration)
	}
	if s.CurrentRevision != "r2" || byType[kruiseappsv1alpha1.UnitedDeploymentUpdated].Status != corev1.ConditionTrue ||
		byType[kruiseappsv1alpha1.SubsetFailure].Message != "quota" || byType[kruiseappsv1alpha1.SubsetUpdated].Status != corev1.ConditionFalse ||
		byType[kruiseappsv1alpha1.SubsetUpdated].LastTransitionTime != now {
		t.Errorf("status %+v", s)
	}
}

func conditionMap(s kruiseappsv1alpha1.UnitedDeploymentStatus) map[kruiseappsv1alpha1.UnitedDeploymentConditionType]kruiseappsv1alpha1.UnitedDeploymentCondition {
	out := map[kruiseappsv1alpha1.UnitedDeploymentConditionType]kruiseappsv1alpha1.UnitedDeploymentCondition{}
	for _, c := range s.Conditions {
		out[c.Type] = c
	}
	return out
}

// Counts of updated pods are stale while the workload's controller has not seen its spec, or while this plan
// moves it to another revision: the rollout must not look done before it starts.
func TestStatusIgnoresStaleUpdatedCounts(t *testing.T) {
	u := ud(n(4), sub("a"), sub("b"))
	u.Status.CurrentRevision = "r1"
	a := existing(t, u, "a", "r2", Counts{2, 2, 2, 2})
	a.Generation, a.Status.ObservedGeneration = 2, 1
	b := existing(t, u, "b", "r1", Counts{2, 2, 2, 2})
	p, err := Decide(Input{UD: u, Revision: "r2", Owned: []client.Object{a, b}})
	if err != nil || !p.Rolled["b"] || p.Rolled["a"] {
		t.Fatalf("plan rolled %v (%v)", p.Rolled, err)
	}
	s := Status(StatusInput{UD: u, Plan: p, Revision: "r2"})
	if s.Replicas != 4 || s.ReadyReplicas != 4 || s.UpdatedReplicas != 0 || s.UpdatedReadyReplicas != 0 || s.CurrentRevision != "r1" {
		t.Errorf("status %+v", s)
	}
}
