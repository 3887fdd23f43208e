package controller

import (
	"context"
	"fmt"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// cloneSetTemplate is a CloneSet template of nginx:1; the tests change its image to update it.
func cloneSetTemplate() func(*kruiseappsv1alpha1.SubsetTemplate) {
	return func(t *kruiseappsv1alpha1.SubsetTemplate) {
		t.CloneSetTemplate = &kruiseappsv1alpha1.CloneSetTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
		t.CloneSetTemplate.Spec.Template = pod("nginx:1")
		// The CloneSet schema requires a selector; each subset's workload gets the UnitedDeployment's, narrowed.
		t.CloneSetTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	}
}

// replicasOf reads each subset's CloneSet's replicas and partition.
func replicasOf(sets map[string]*kruiseappsv1alpha1.CloneSet) (replicas, partitions map[string]int32) {
	replicas, partitions = map[string]int32{}, map[string]int32{}
	for name, cs := range sets {
		replicas[name] = ptr.Deref(cs.Spec.Replicas, -1)
		if p := cs.Spec.UpdateStrategy.Partition; p != nil {
			partitions[name] = int32(p.IntValue())
		}
	}
	return replicas, partitions
}

// waitCloneSets waits until the subsets' CloneSets have the replicas (and, when not nil, the partitions).
func waitCloneSets(t *testing.T, c client.Client, ns, what string, replicas, partitions map[string]int32) map[string]*kruiseappsv1alpha1.CloneSet {
	t.Helper()
	var sets map[string]*kruiseappsv1alpha1.CloneSet
	eventually(t, what, func(ctx context.Context) (bool, error) {
		var err error
		if sets, err = cloneSets(ctx, c, ns); err != nil {
			return false, err
		}
		r, p := replicasOf(sets)
		return maps.Equal(r, replicas) && (partitions == nil || maps.Equal(p, partitions)), fmt.Errorf("replicas %v partitions %v", r, p)
	})
	return sets
}

// The seed story: six replicas over three zones make three CloneSets of two, each pinned to its zone and
// owned by the UnitedDeployment; the status reports them.
func TestCloneSetsAcrossThreeZones(t *testing.T) {
	t.Parallel()
	c, ns := start(t)
	ud := newUD(ns, 6, zones("zone-a", "zone-b", "zone-c"), cloneSetTemplate())
	create(t, c, ud)
	sets := waitCloneSets(t, c, ns, "three CloneSets of two", map[string]int32{"zone-a": 2, "zone-b": 2, "zone-c": 2}, nil)
	got := waitStatus(t, c, ud, "status of the first reconcile", func(u *kruiseappsv1alpha1.UnitedDeployment) bool {
		return u.Status.ObservedGeneration == u.Generation && u.Status.UpdateStatus != nil
	})
	for zone, cs := range sets {
		checkCloneSet(t, cs, got, zone)
	}
	s := got.Status
	if s.CurrentRevision == "" || s.UpdateStatus.UpdatedRevision != s.CurrentRevision || s.LabelSelector != "app=web" ||
		!maps.Equal(s.SubsetReplicas, map[string]int32{"zone-a": 2, "zone-b": 2, "zone-c": 2}) || len(s.SubsetStatuses) != 3 ||
		!maps.Equal(s.UpdateStatus.CurrentPartitions, map[string]int32{"zone-a": 0, "zone-b": 0, "zone-c": 0}) {
		t.Errorf("status %+v", s)
	}
	if cond := condition(s, kruiseappsv1alpha1.SubsetUpdated); cond == nil || cond.Status != corev1.ConditionTrue {
		t.Errorf("SubsetUpdated %+v", cond)
	}
	cr := &appsv1.ControllerRevision{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: s.CurrentRevision}, cr); err != nil || !controlledBy(cr, got) {
		t.Errorf("revision %s: %v (owners %v)", s.CurrentRevision, err, cr.OwnerReferences)
	}
	eventually(t, "an event per subset created", func(ctx context.Context) (bool, error) {
		related, err := eventsFor(ctx, c, ud, "SuccessfulCreateSubset")
		return len(related) == 3 && related[sets["zone-a"].Name], fmt.Errorf("events related to %v (%w)", related, err)
	})
}

// checkCloneSet checks what a subset's CloneSet carries from the UnitedDeployment and its subset.
func checkCloneSet(t *testing.T, cs *kruiseappsv1alpha1.CloneSet, ud *kruiseappsv1alpha1.UnitedDeployment, zone string) {
	t.Helper()
	if ref := metav1.GetControllerOf(cs); ref == nil || ref.UID != ud.UID {
		t.Errorf("%s: controller %+v", cs.Name, ref)
	}
	if cs.Labels[kruiseappsv1alpha1.ControllerRevisionHashLabelKey] != ud.Status.UpdateStatus.UpdatedRevision || cs.Labels["app"] != "web" {
		t.Errorf("%s: labels %v", cs.Name, cs.Labels)
	}
	if cs.Spec.Selector.MatchLabels[kruiseappsv1alpha1.SubSetNameLabelKey] != zone || cs.Spec.Template.Labels[kruiseappsv1alpha1.SubSetNameLabelKey] != zone {
		t.Errorf("%s: selector %v, pod labels %v", cs.Name, cs.Spec.Selector, cs.Spec.Template.Labels)
	}
	aff := cs.Spec.Template.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		t.Fatalf("%s: no required node affinity: %+v", cs.Name, aff)
	}
	terms := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || terms[0].MatchExpressions[0].Values[0] != zone {
		t.Errorf("%s: node terms %+v", cs.Name, terms)
	}
}

// Scaling the UnitedDeployment rescales the subsets; a template change with manual partitions moves each
// subset's CloneSet to the new revision with its partition; once every pod is updated and ready the new
// revision is current; a subset dropped from the topology loses its CloneSet.
func TestScaleUpdateAndRemoveSubset(t *testing.T) {
	t.Parallel()
	c, ns := start(t)
	ud := newUD(ns, 6, zones("zone-a", "zone-b", "zone-c"), cloneSetTemplate())
	create(t, c, ud)
	first := waitCloneSets(t, c, ns, "three CloneSets of two", map[string]int32{"zone-a": 2, "zone-b": 2, "zone-c": 2}, nil)

	update(t, c, ud, func(u *kruiseappsv1alpha1.UnitedDeployment) { u.Spec.Replicas = ptr.To[int32](9) })
	waitCloneSets(t, c, ns, "three CloneSets of three", map[string]int32{"zone-a": 3, "zone-b": 3, "zone-c": 3}, nil)
	for _, cs := range first {
		reportRolledOut(t, c, cs)
	}
	old := waitStatus(t, c, ud, "nine pods ready", func(u *kruiseappsv1alpha1.UnitedDeployment) bool {
		return u.Status.ObservedGeneration == u.Generation && u.Status.ReadyReplicas == 9
	}).Status.CurrentRevision

	update(t, c, ud, func(u *kruiseappsv1alpha1.UnitedDeployment) {
		u.Spec.Template.CloneSetTemplate.Spec.Template.Spec.Containers[0].Image = "nginx:2"
		u.Spec.UpdateStrategy.ManualUpdate.Partitions = map[string]int32{"zone-a": 3, "zone-b": 1}
	})
	sets := waitCloneSets(t, c, ns, "partitions set", map[string]int32{"zone-a": 3, "zone-b": 3, "zone-c": 3},
		map[string]int32{"zone-a": 3, "zone-b": 1, "zone-c": 0})
	got := waitStatus(t, c, ud, "the new revision rolling out", func(u *kruiseappsv1alpha1.UnitedDeployment) bool {
		return u.Status.ObservedGeneration == u.Generation && u.Status.UpdateStatus.UpdatedRevision != old
	})
	// The CloneSets have not reported the new template's pods yet: the old revision stays current.
	if got.Status.CurrentRevision != old || got.Status.UpdatedReplicas != 0 || got.Status.Replicas != 9 || !maps.Equal(got.Status.UpdateStatus.CurrentPartitions, map[string]int32{"zone-a": 3, "zone-b": 1, "zone-c": 0}) {
		t.Errorf("status %+v, updateStatus %+v", got.Status, got.Status.UpdateStatus)
	}
	for zone, cs := range sets {
		if cs.Name != first[zone].Name || cs.Spec.Template.Spec.Containers[0].Image != "nginx:2" ||
			cs.Labels[kruiseappsv1alpha1.ControllerRevisionHashLabelKey] != got.Status.UpdateStatus.UpdatedRevision {
			t.Errorf("%s: %s image %s labels %v", zone, cs.Name, cs.Spec.Template.Spec.Containers[0].Image, cs.Labels)
		}
	}

	for _, cs := range sets {
		reportRolledOut(t, c, cs)
	}
	got = waitStatus(t, c, ud, "the new revision current", func(u *kruiseappsv1alpha1.UnitedDeployment) bool {
		return u.Status.CurrentRevision == u.Status.UpdateStatus.UpdatedRevision
	})
	if s := got.Status; s.Replicas != 9 || s.ReadyReplicas != 9 || s.UpdatedReplicas != 9 || s.UpdatedReadyReplicas != 9 {
		t.Errorf("counts %+v", s)
	}
	got = waitStatus(t, c, ud, "Ready", func(u *kruiseappsv1alpha1.UnitedDeployment) bool {
		cond := condition(u.Status, "Ready")
		return cond != nil && cond.Status == corev1.ConditionTrue
	})
	if cond := condition(got.Status, "Reconciling"); cond == nil || cond.Status != corev1.ConditionFalse {
		t.Errorf("Reconciling %+v", cond)
	}

	update(t, c, ud, func(u *kruiseappsv1alpha1.UnitedDeployment) {
		u.Spec.Topology.Subsets = u.Spec.Topology.Subsets[:2]
		delete(u.Spec.UpdateStrategy.ManualUpdate.Partitions, "zone-c")
	})
	waitCloneSets(t, c, ns, "zone-c's CloneSet gone, nine over two", map[string]int32{"zone-a": 4, "zone-b": 5}, nil)
}

// reportRolledOut writes the status a CloneSet controller would once all its pods run its current template,
// ready.
func reportRolledOut(t *testing.T, c client.Client, cs *kruiseappsv1alpha1.CloneSet) {
	t.Helper()
	eventually(t, "CloneSet status written", func(ctx context.Context) (bool, error) {
		got := &kruiseappsv1alpha1.CloneSet{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cs), got); err != nil {
			return false, err
		}
		n := *got.Spec.Replicas
		got.Status = kruiseappsv1alpha1.CloneSetStatus{ObservedGeneration: got.Generation, Replicas: n, ReadyReplicas: n,
			AvailableReplicas: n, UpdatedReplicas: n, UpdatedReadyReplicas: n}
		err := c.Status().Update(ctx, got)
		return err == nil, err
	})
}

// A Deployment template: one Deployment per subset, a fixed count and the rest shared, tolerations and the
// subset's patch applied to the pod template.
func TestDeploymentSubsets(t *testing.T) {
	t.Parallel()
	c, ns := start(t)
	subsets := zones("zone-a", "zone-b")
	subsets[0].Replicas = ptr.To(intstr.FromString("25%"))
	subsets[1].Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	subsets[1].Patch = runtime.RawExtension{Raw: []byte(`{"spec":{"containers":[{"name":"main","env":[{"name":"ZONE","value":"b"}]}]}}`)}
	ud := newUD(ns, 4, subsets, func(t *kruiseappsv1alpha1.SubsetTemplate) {
		t.DeploymentTemplate = &kruiseappsv1alpha1.DeploymentTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
		t.DeploymentTemplate.Spec.Template = pod("nginx:1")
	})
	create(t, c, ud)
	var deps map[string]*appsv1.Deployment
	eventually(t, "two Deployments", func(ctx context.Context) (bool, error) {
		list := &appsv1.DeploymentList{}
		var err error
		deps, err = bySubset[appsv1.Deployment](ctx, c, ns, list, func() []appsv1.Deployment { return list.Items })
		return err == nil && len(deps) == 2, fmt.Errorf("%d Deployments (%w)", len(deps), err)
	})
	if a, b := deps["zone-a"], deps["zone-b"]; *a.Spec.Replicas != 1 || *b.Spec.Replicas != 3 {
		t.Errorf("replicas %d and %d, want 1 (25%% of 4) and 3", *a.Spec.Replicas, *b.Spec.Replicas)
	}
	b := deps["zone-b"]
	if tol := b.Spec.Template.Spec.Tolerations; len(tol) != 1 || tol[0].Key != "spot" {
		t.Errorf("zone-b tolerations %+v", tol)
	}
	if env := b.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Value != "b" || b.Annotations[kruiseappsv1alpha1.AnnotationSubsetPatchKey] == "" {
		t.Errorf("zone-b patch: env %+v annotations %v", env, b.Annotations)
	}
	if env := deps["zone-a"].Spec.Template.Spec.Containers[0].Env; len(env) != 0 {
		t.Errorf("zone-a got zone-b's patch: %+v", env)
	}
}

// A spec the webhook would refuse (stored while it was down) creates nothing and says why.
func TestInvalidSpecReported(t *testing.T) {
	t.Parallel()
	c, ns := start(t)
	subsets := zones("zone-a", "zone-b")
	subsets[0].Replicas = ptr.To(intstr.FromInt32(5))
	ud := newUD(ns, 2, subsets, cloneSetTemplate())
	if err := c.Create(t.Context(), ud); err != nil {
		t.Fatal(err)
	}
	got := waitStatus(t, c, ud, "a SubsetFailure condition", func(u *kruiseappsv1alpha1.UnitedDeployment) bool {
		cond := condition(u.Status, kruiseappsv1alpha1.SubsetFailure)
		return cond != nil && cond.Reason == "InvalidSpec"
	})
	if cond := condition(got.Status, kruiseappsv1alpha1.SubsetFailure); cond.Message != "the subsets' fixed replicas (5) exceed spec.replicas (2)" {
		t.Errorf("message %q", cond.Message)
	}
	if cond := condition(got.Status, "Stalled"); cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != "InvalidSpec" {
		t.Errorf("Stalled %+v", cond)
	}
	if sets, err := cloneSets(t.Context(), c, ns); err != nil || len(sets) != 0 {
		t.Errorf("CloneSets %v (%v)", sets, err)
	}
}

// A StatefulSet template: each subset's StatefulSet keeps the template's fields and takes its partition in
// rollingUpdate.
func TestStatefulSetSubsetsPartitions(t *testing.T) {
	t.Parallel()
	c, ns := start(t)
	ud := newUD(ns, 4, zones("zone-a", "zone-b"), func(t *kruiseappsv1alpha1.SubsetTemplate) {
		t.StatefulSetTemplate = &kruiseappsv1alpha1.StatefulSetTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
		t.StatefulSetTemplate.Spec = appsv1.StatefulSetSpec{ServiceName: "web", PodManagementPolicy: appsv1.ParallelPodManagement, Template: pod("redis:7")}
	})
	ud.Spec.UpdateStrategy.ManualUpdate = &kruiseappsv1alpha1.ManualUpdate{Partitions: map[string]int32{"zone-a": 1}}
	create(t, c, ud)
	var sets map[string]*appsv1.StatefulSet
	eventually(t, "two StatefulSets", func(ctx context.Context) (bool, error) {
		list := &appsv1.StatefulSetList{}
		var err error
		sets, err = bySubset[appsv1.StatefulSet](ctx, c, ns, list, func() []appsv1.StatefulSet { return list.Items })
		return err == nil && len(sets) == 2, fmt.Errorf("%d StatefulSets (%w)", len(sets), err)
	})
	for zone, want := range map[string]int32{"zone-a": 1, "zone-b": 0} {
		sts := sets[zone]
		if *sts.Spec.Replicas != 2 || *sts.Spec.UpdateStrategy.RollingUpdate.Partition != want || sts.Spec.ServiceName != "web" ||
			sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
			t.Errorf("%s: replicas %d partition %d service %q policy %s", zone, *sts.Spec.Replicas, *sts.Spec.UpdateStrategy.RollingUpdate.Partition,
				sts.Spec.ServiceName, sts.Spec.PodManagementPolicy)
		}
	}
}
