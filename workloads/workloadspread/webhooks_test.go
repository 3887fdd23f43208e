package workloadspread

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/internal/controller"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/internal/plan"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fixture is a reconciled WorkloadSpread over ReplicaSet web (subset a: max 2, room 2) held by a fake client.
func fixture(t *testing.T) (*spreader, client.Client, *corev1.Pod) {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kruiseappsv1alpha1.AddToScheme(scheme)
	two := intstr.FromInt32(2)
	ws := &kruiseappsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: "ws", Namespace: "ns", Generation: 1},
		Spec: kruiseappsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &kruiseappsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web"},
			Subsets:         []kruiseappsv1alpha1.WorkloadSpreadSubset{{Name: "a", MaxReplicas: &two}}},
		Status: kruiseappsv1alpha1.WorkloadSpreadStatus{ObservedGeneration: 1,
			SubsetStatuses: []kruiseappsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", MissingReplicas: 2}}}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "rs-uid"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ws, rs).WithStatusSubresource(ws).
		WithIndex(&kruiseappsv1alpha1.WorkloadSpread{}, controller.TargetIndex, controller.TargetKeys).Build()
	s := &spreader{reader: c, ledger: &controller.Ledger{Client: c, Live: c}, clock: clocktesting.NewFakePassiveClock(now)}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}}}
	return s, c, pod
}

func subsetStatus(t *testing.T, c client.Client) kruiseappsv1alpha1.WorkloadSpreadSubsetStatus {
	t.Helper()
	ws := &kruiseappsv1alpha1.WorkloadSpread{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "ws"}, ws); err != nil {
		t.Fatal(err)
	}
	return ws.Status.SubsetStatuses[0]
}

// A placed pod is recorded before it exists, once even if the webhook sees it again; pods beyond the room
// are left alone.
func TestMutateRecordsThePod(t *testing.T) {
	s, c, pod := fixture(t)
	if changed, err := s.mutate(context.Background(), pod); !changed || err != nil {
		t.Fatalf("mutate = %v, %v", changed, err)
	}
	if m, ok := plan.MatchedOf(pod); !ok || m.Subset != "a" {
		t.Errorf("pod annotations %v", pod.Annotations)
	}
	if changed, err := s.mutate(context.Background(), pod.DeepCopy()); changed || err != nil {
		t.Errorf("mutate of a placed pod = %v, %v", changed, err)
	}
	st := subsetStatus(t, c)
	if _, ok := st.CreatingPods["web-0"]; !ok || len(st.CreatingPods) != 1 || st.MissingReplicas != 1 {
		t.Errorf("subset status %+v", st)
	}
	for i, want := range []bool{true, false} {
		next := pod.DeepCopy()
		next.Name, next.Annotations = fmt.Sprintf("web-%d", i+1), nil
		if changed, err := s.mutate(context.Background(), next); changed != want || err != nil {
			t.Errorf("mutate of pod %d = %v, %v; want %v", i+1, changed, err, want)
		}
	}
}

// Deletions and evictions of an active placed pod are recorded once; updates, dry runs and terminating pods
// are not.
func TestReleasedRecordsDeletions(t *testing.T) {
	cases := []struct {
		name string
		d    func(pod *corev1.Pod) webhooks.PodDisruption
		want bool
	}{
		{name: "delete", want: true, d: func(p *corev1.Pod) webhooks.PodDisruption {
			return webhooks.PodDisruption{Operation: webhooks.PodDelete, Pod: p}
		}},
		{name: "evict", want: true, d: func(p *corev1.Pod) webhooks.PodDisruption {
			return webhooks.PodDisruption{Operation: webhooks.PodEvict, Pod: p}
		}},
		{name: "update", d: func(p *corev1.Pod) webhooks.PodDisruption {
			return webhooks.PodDisruption{Operation: webhooks.PodUpdate, Pod: p, Updated: p}
		}},
		{name: "dry run", d: func(p *corev1.Pod) webhooks.PodDisruption {
			return webhooks.PodDisruption{Operation: webhooks.PodDelete, Pod: p, DryRun: true}
		}},
		{name: "terminating", d: func(p *corev1.Pod) webhooks.PodDisruption {
			p.DeletionTimestamp = &metav1.Time{Time: now}
			return webhooks.PodDisruption{Operation: webhooks.PodDelete, Pod: p}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, c, pod := fixture(t)
			if _, err := s.mutate(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
			if err := s.released(context.Background(), tc.d(pod)); err != nil {
				t.Fatalf("released refused: %v", err)
			}
			st := subsetStatus(t, c)
			_, recorded := st.DeletingPods["web-0"]
			if recorded != tc.want || (st.MissingReplicas == 2) != tc.want {
				t.Errorf("subset status %+v, want recorded %v", st, tc.want)
			}
		})
	}
}

// A WorkloadSpread whose status lags its spec refuses the pod rather than overfill a subset.
func TestMutateRefusesBeforeReconcile(t *testing.T) {
	s, c, pod := fixture(t)
	ws := &kruiseappsv1alpha1.WorkloadSpread{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "ws"}, ws); err != nil {
		t.Fatal(err)
	}
	ws.Status.ObservedGeneration = 0
	if err := c.Status().Update(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	if _, err := s.mutate(context.Background(), pod); err == nil {
		t.Error("a pod is placed from a status of another generation")
	}
}
