package workloadspread

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Under the Adaptive strategy a pod the scheduler cannot place in its subset is deleted once stuck past
// rescheduleCriticalSeconds, the subset is marked unschedulable, and the next pod goes to the next subset.
func TestAdaptiveReschedulesStuckPods(t *testing.T) {
	e := start(t)
	rs := e.replicaSet(t, "adaptive", 1)
	ws := e.spread(t, rs, []string{"zone-a", "zone-b"}, []*intstr.IntOrString{maxOf(intstr.FromInt32(1)), nil})
	e.update(t, ws, func(ws *kruiseappsv1alpha1.WorkloadSpread) {
		ws.Spec.ScheduleStrategy = kruiseappsv1alpha1.WorkloadSpreadScheduleStrategy{Type: kruiseappsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType,
			Adaptive: &kruiseappsv1alpha1.AdaptiveWorkloadSpreadStrategy{RescheduleCriticalSeconds: ptrTo[int32](1)}}
	})
	stuck, err := e.pod(t.Context(), rs, "adaptive-0")
	if err != nil {
		t.Fatal(err)
	}
	if got := subsetOf(t, stuck); got != "zone-a" {
		t.Fatalf("the first pod went to %q", got)
	}
	// As the scheduler reports a pod it finds no node for, a minute ago.
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	unschedulable := fmt.Sprintf(`{"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","lastTransitionTime":%q}]}}`, since)
	if err := e.c.Status().Patch(t.Context(), stuck, client.RawPatch(types.MergePatchType, []byte(unschedulable))); err != nil {
		t.Fatal(err)
	}
	e.eventually(t, "the stuck pod deleted and zone-a unschedulable", func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(stuck), &corev1.Pod{})
		got := &kruiseappsv1alpha1.WorkloadSpread{}
		if getErr := e.c.Get(ctx, client.ObjectKeyFromObject(ws), got); getErr != nil {
			return false, getErr
		}
		a := got.Status.SubsetStatuses[0]
		return apierrors.IsNotFound(err) && len(a.Conditions) == 1 && a.Conditions[0].Type == kruiseappsv1alpha1.SubsetSchedulable &&
			a.Conditions[0].Status == corev1.ConditionFalse, fmt.Errorf("subset %+v, pod read: %w", a, err)
	})
	e.eventually(t, "the SubsetUnschedulable event", func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := e.c.List(ctx, list, client.InNamespace(e.ns)); err != nil {
			return false, err
		}
		for _, ev := range list.Items {
			if ev.Reason == "SubsetUnschedulable" && ev.Regarding.Name == ws.Name && strings.Contains(ev.Note, "zone-a") {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none about zone-a", len(list.Items))
	})
	next, err := e.pod(t.Context(), rs, "adaptive-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := subsetOf(t, next); got != "zone-b" {
		t.Errorf("the pod after the reschedule went to %q, want zone-b", got)
	}
}

func ptrTo[T any](v T) *T { return &v }
