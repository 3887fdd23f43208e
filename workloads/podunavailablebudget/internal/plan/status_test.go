package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

type records = map[string]metav1.Time

func TestStatus(t *testing.T) {
	cases := []struct {
		name                   string
		pods                   []*corev1.Pod
		total                  int32
		disrupted, unavailable records
		want                   kruisepolicyv1alpha1.PodUnavailableBudgetStatus
		wantRecheck            time.Duration
		wantNotDeleted         []string
	}{
		{name: "ten ready pods, maxUnavailable 1", pods: pods("a", "b", "c", "d", "e", "f", "g", "h", "i", "j"), total: 10,
			want: status(1, 10, 9, 10, nil, nil)},
		{name: "one not ready pod takes the budget", pods: append(pods("a", "b", "c"), readyPod("d", notReady)), total: 4,
			want: status(0, 3, 3, 4, nil, nil)},
		{name: "a pod marked unavailable by label does not count",
			pods: append(pods("a", "b", "c"), readyPod("d", labelled("unavailable-pod.kruise.io/drain", "true"))), total: 4,
			want: status(0, 3, 3, 4, nil, nil)},
		{name: "terminating and finished pods do not count",
			pods:  append(pods("a", "b"), readyPod("c", terminating), readyPod("d", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })),
			total: 4, want: status(0, 2, 3, 4, nil, nil)},
		{name: "a recorded eviction counts as unavailable until it expires", pods: pods("a", "b", "c", "d"), total: 4,
			disrupted: records{"d": ago(5 * time.Second)},
			want:      status(0, 3, 3, 4, records{"d": ago(5 * time.Second)}, nil), wantRecheck: 15 * time.Second},
		{name: "an expired eviction of a pod still there is dropped and reported", pods: pods("a", "b", "c", "d"), total: 4,
			disrupted: records{"d": ago(21 * time.Second)}, want: status(1, 4, 3, 4, nil, nil), wantNotDeleted: []string{"d"}},
		{name: "the record of a pod that went is dropped", pods: pods("a", "b", "c"), total: 4,
			disrupted: records{"d": ago(time.Second)}, want: status(0, 3, 3, 4, nil, nil)},
		{name: "an in-place update counts for 10 s, the soonest expiry wakes", pods: pods("a", "b", "c", "d"), total: 4,
			disrupted: records{"c": ago(time.Second)}, unavailable: records{"d": ago(8 * time.Second)},
			want:        status(0, 2, 3, 4, records{"c": ago(time.Second)}, records{"d": ago(8 * time.Second)}),
			wantRecheck: 2 * time.Second},
		{name: "after 10 s an updated pod counts by its own state", pods: append(pods("a", "b", "c"), readyPod("d", notReady)), total: 4,
			unavailable: records{"d": ago(11 * time.Second)}, want: status(0, 3, 3, 4, nil, nil)},
		{name: "more available than desired", pods: pods("a", "b", "c", "d", "e"), total: 4, want: status(2, 5, 3, 4, nil, nil)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pub := maxUnavailable(intstr.FromInt32(1))
			pub.Status.DisruptedPods, pub.Status.UnavailablePods = tc.disrupted, tc.unavailable
			got, err := Status(Input{PUB: pub, Pods: tc.pods, Total: tc.total, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if got.Recheck != tc.wantRecheck || !cmp.Equal(got.NotDeleted, tc.wantNotDeleted) {
				t.Errorf("recheck %v, not deleted %v; want %v, %v", got.Recheck, got.NotDeleted, tc.wantRecheck, tc.wantNotDeleted)
			}
		})
	}
}

func TestStatusOfAnUnreadableBudget(t *testing.T) {
	if _, err := Status(Input{PUB: maxUnavailable(intstr.FromString("most")), Total: 3, Now: t0}); err == nil {
		t.Error("no error")
	}
}

// status is the expected status of generation 3; nil records are the empty maps Status always returns.
func status(allowed, current, desired, total int32, disrupted, unavailable records) kruisepolicyv1alpha1.PodUnavailableBudgetStatus {
	if disrupted == nil {
		disrupted = records{}
	}
	if unavailable == nil {
		unavailable = records{}
	}
	return kruisepolicyv1alpha1.PodUnavailableBudgetStatus{ObservedGeneration: 3, UnavailableAllowed: allowed, CurrentAvailable: current,
		DesiredAvailable: desired, TotalReplicas: total, DisruptedPods: disrupted, UnavailablePods: unavailable}
}
