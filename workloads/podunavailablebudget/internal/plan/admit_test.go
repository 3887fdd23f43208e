package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

// TestDecide is the decision table of a budget for one pod's disruption.
func TestDecide(t *testing.T) {
	del, upd, evict := kruisepolicyv1alpha1.PubDeleteOperation, kruisepolicyv1alpha1.PubUpdateOperation, kruisepolicyv1alpha1.PubEvictOperation
	many := records{}
	for i := range MaxRecordedPods + 1 {
		many[fmt.Sprintf("pod-%d", i)] = ago(time.Second)
	}
	cases := []struct {
		name        string
		allowed     int32
		desired     int32
		operations  string
		disrupted   records
		unavailable records
		op          kruisepolicyv1alpha1.PubOperation
		want        Verdict
		wantReason  string
		// wantRecords: on Admit, the records that hold the pod afterwards.
		wantRecords string
	}{
		{name: "an eviction within the budget is recorded as a disruption", allowed: 1, desired: 9, op: evict, want: Admit, wantRecords: "disrupted"},
		{name: "a deletion within the budget is recorded as a disruption", allowed: 2, desired: 9, op: del, want: Admit, wantRecords: "disrupted"},
		{name: "an update within the budget is recorded as unavailable", allowed: 1, desired: 9, op: upd, want: Admit, wantRecords: "unavailable"},
		{name: "no budget left", allowed: 0, desired: 9, op: evict, want: Refuse, wantReason: "allows no more unavailable pods"},
		{name: "a negative allowance refuses too", allowed: -1, desired: 9, op: del, want: Refuse},
		{name: "a budget wanting no pod available exempts", allowed: 0, desired: 0, op: evict, want: Exempt},
		{name: "an operation the budget does not protect is exempt", allowed: 0, desired: 9, operations: "DELETE,EVICT", op: upd, want: Exempt},
		{name: "a protected operation of the annotation", allowed: 0, desired: 9, operations: "DELETE", op: del, want: Refuse},
		{name: "a pod already disrupted costs nothing more", allowed: 0, desired: 9, disrupted: records{"web-0": ago(time.Second)}, op: del, want: Exempt},
		{name: "a pod already updating costs nothing more", allowed: 0, desired: 9, unavailable: records{"web-0": ago(time.Second)}, op: evict, want: Exempt},
		{name: "too many unconfirmed records", allowed: 5, desired: 9, disrupted: many, op: evict, want: RefuseUnconfirmed,
			wantReason: "more than 2000 disruptions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pub := maxUnavailable(intstr.FromInt32(1))
			if tc.operations != "" {
				pub.Annotations = map[string]string{kruisepolicyv1alpha1.PubProtectOperationAnnotation: tc.operations}
			}
			pub.Status = kruisepolicyv1alpha1.PodUnavailableBudgetStatus{UnavailableAllowed: tc.allowed, DesiredAvailable: tc.desired,
				CurrentAvailable: tc.desired + tc.allowed, DisruptedPods: tc.disrupted, UnavailablePods: tc.unavailable}
			before := pub.Status.DeepCopy()
			d := Decide(pub, "web-0", tc.op, t0)
			if d.Verdict != tc.want || !strings.Contains(d.Reason, tc.wantReason) {
				t.Fatalf("verdict %v (%q), want %v (%q)", d.Verdict, d.Reason, tc.want, tc.wantReason)
			}
			if diff := cmp.Diff(before, &pub.Status); diff != "" {
				t.Errorf("Decide changed the budget it read:\n%s", diff)
			}
			if tc.want != Admit {
				if d.Status != nil {
					t.Errorf("a %v decision carries a status", d.Verdict)
				}
				return
			}
			checkRecorded(t, before, d.Status, tc.wantRecords)
		})
	}
}

// checkRecorded: one unavailable pod taken, web-0 recorded at t0 in the named records, nothing else changed.
func checkRecorded(t *testing.T, before, after *kruisepolicyv1alpha1.PodUnavailableBudgetStatus, in string) {
	t.Helper()
	want := before.DeepCopy()
	want.UnavailableAllowed--
	target := &want.DisruptedPods
	if in == "unavailable" {
		target = &want.UnavailablePods
	}
	if *target == nil {
		*target = records{}
	}
	(*target)["web-0"] = metav1.NewTime(t0)
	if diff := cmp.Diff(want, after); diff != "" {
		t.Errorf("recorded status (-want +got):\n%s", diff)
	}
}

// Ten disruptions decided one after the other on the status each admission wrote: exactly maxUnavailable
// go through, whatever their order, which is what the guard's conflict-checked writes serialize them into.
func TestDecideInSequenceAdmitsTheBudgetOnly(t *testing.T) {
	pub := maxUnavailable(intstr.FromInt32(2))
	res, err := Status(Input{PUB: pub, Pods: pods("p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"), Total: 10, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	pub.Status = res.Status
	admitted := 0
	for _, p := range []string{"p3", "p7", "p3", "p0", "p9", "p1", "p2", "p4", "p5", "p6", "p8"} {
		d := Decide(pub, p, kruisepolicyv1alpha1.PubEvictOperation, t0)
		if d.Verdict == Admit {
			admitted++
			pub.Status = *d.Status
		}
	}
	if admitted != 2 || pub.Status.UnavailableAllowed != 0 || len(pub.Status.DisruptedPods) != 2 {
		t.Errorf("admitted %d, status %+v", admitted, pub.Status)
	}
	// The controller's next count sees the two recorded pods as unavailable and allows none.
	again, err := Status(Input{PUB: pub, Pods: pods("p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"), Total: 10, Now: t0.Add(time.Second)})
	if err != nil || again.Status.UnavailableAllowed != 0 || again.Status.CurrentAvailable != 8 {
		t.Errorf("recount %+v, %v", again.Status, err)
	}
}
