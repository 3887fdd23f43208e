package controller

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// subsetPod creates a pod of the subset: placed on a node, or reported Unschedulable by the scheduler.
func subsetPod(t *testing.T, c client.Client, ns, subset string, i int, placed bool) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", subset, i),
		Labels: map[string]string{"app": "web", kruiseappsv1alpha1.SubSetNameLabelKey: subset}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}}}
	if placed {
		p.Spec.NodeName = "node-" + subset
	}
	managertest.Create(t, c, p)
	if placed {
		return
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
}

// Under the Adaptive strategy a subset whose pods stay Unschedulable keeps the pods it runs and its other
// replicas move to the next subset; the subset reports Schedulable False.
func TestAdaptiveMovesUnschedulableReplicas(t *testing.T) {
	t.Parallel()
	c, ns := start(t)
	subsets := zones("zone-a", "zone-b")
	subsets[0].MaxReplicas = ptr.To(intstr.FromInt32(4))
	ud := newUD(ns, 4, subsets, cloneSetTemplate())
	ud.Spec.Topology.ScheduleStrategy = kruiseappsv1alpha1.UnitedDeploymentScheduleStrategy{
		Type:     kruiseappsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType,
		Adaptive: &kruiseappsv1alpha1.AdaptiveUnitedDeploymentStrategy{RescheduleCriticalSeconds: ptr.To[int32](0)},
	}
	create(t, c, ud)
	sets := waitCloneSets(t, c, ns, "zone-a preferred", map[string]int32{"zone-a": 4, "zone-b": 0}, nil)
	for i := range 4 {
		subsetPod(t, c, ns, "zone-a", i, i < 2)
	}
	// The pods are not watched: the CloneSet's status, as its controller would write it, wakes the controller.
	reportRolledOut(t, c, sets["zone-a"])
	waitCloneSets(t, c, ns, "two replicas moved to zone-b", map[string]int32{"zone-a": 2, "zone-b": 2}, nil)
	got := waitStatus(t, c, ud, "zone-a unschedulable", func(u *kruiseappsv1alpha1.UnitedDeployment) bool {
		st := u.Status.GetSubsetStatus("zone-a")
		return st != nil && len(st.Conditions) == 1 && st.Conditions[0].Status == corev1.ConditionFalse
	})
	if cond := got.Status.GetSubsetStatus("zone-a").Conditions[0]; cond.Type != kruiseappsv1alpha1.UnitedDeploymentSubsetSchedulable || cond.Reason != "reschedule" {
		t.Errorf("zone-a condition %+v", cond)
	}
	if st := got.Status.GetSubsetStatus("zone-b"); st == nil || len(st.Conditions) != 0 {
		t.Errorf("zone-b status %+v", st)
	}
}
