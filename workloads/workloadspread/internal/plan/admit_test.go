package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestChoose(t *testing.T) {
	unschedulable := func(ws *kruiseappsv1alpha1.WorkloadSpread) *kruiseappsv1alpha1.WorkloadSpread {
		ws.Status.SubsetStatuses[0].Conditions = []kruiseappsv1alpha1.WorkloadSpreadSubsetCondition{
			{Type: kruiseappsv1alpha1.SubsetSchedulable, Status: corev1.ConditionFalse}}
		return ws
	}
	cases := []struct {
		name string
		ws   *kruiseappsv1alpha1.WorkloadSpread
		want string // "" when no subset
	}{
		{name: "the first subset with room", ws: spread(1, 2, -1), want: "a"},
		{name: "a full subset is skipped", ws: spread(0, 2, -1), want: "b"},
		{name: "an unlimited subset always has room", ws: spread(0, 0, -1), want: "c"},
		{name: "every subset full: no subset", ws: func() *kruiseappsv1alpha1.WorkloadSpread {
			ws := spread(0, 0)
			ws.Spec.Subsets = ws.Spec.Subsets[:2]
			return ws
		}(), want: ""},
		{name: "an unschedulable subset is skipped", ws: unschedulable(spread(2, 2, -1)), want: "b"},
		{name: "a subset without status is skipped", ws: spread(0), want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := Choose(tc.ws)
			got := ""
			if ok {
				got = s.Name
			}
			if got != tc.want {
				t.Errorf("Choose = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReconciled(t *testing.T) {
	if !Reconciled(spread(1, 1, -1)) {
		t.Error("a status with every subset at the generation is not reconciled")
	}
	stale := spread(1, 1, -1)
	stale.Generation = 2
	if Reconciled(stale) {
		t.Error("a status of an older generation is reconciled")
	}
	if Reconciled(spread(1, 1)) {
		t.Error("a status missing a subset is reconciled")
	}
}

// Admissions take room until none is left, so concurrent creations retried on conflict never overfill;
// deletions give room back once per pod.
func TestAdmitAndRelease(t *testing.T) {
	now := metav1.NewTime(t0)
	ws := spread(2, 0, -1)
	for i, want := range []bool{true, true, false} {
		if got := Admit(&ws.Status, "a", string(rune('x'+i)), now); got != want {
			t.Errorf("admission %d = %v, want %v", i, got, want)
		}
	}
	a := ws.Status.SubsetStatuses[0]
	if a.MissingReplicas != 0 || len(a.CreatingPods) != 2 {
		t.Errorf("subset a after admissions: %+v", a)
	}
	if !Admit(&ws.Status, "c", "u", now) || ws.Status.SubsetStatuses[2].MissingReplicas != Unlimited {
		t.Errorf("unlimited subset after admission: %+v", ws.Status.SubsetStatuses[2])
	}
	if !Release(&ws.Status, "a", "x", now) || Release(&ws.Status, "a", "x", now) {
		t.Error("a deletion is not recorded exactly once")
	}
	if got := ws.Status.SubsetStatuses[0].MissingReplicas; got != 1 {
		t.Errorf("missingReplicas after a deletion = %d, want 1", got)
	}
	if !Release(&ws.Status, "c", "u", now) || ws.Status.SubsetStatuses[2].MissingReplicas != Unlimited {
		t.Errorf("unlimited subset after deletion: %+v", ws.Status.SubsetStatuses[2])
	}
	if Release(&ws.Status, "gone", "x", now) || Admit(&ws.Status, "gone", "x", now) {
		t.Error("an unknown subset records a pod")
	}
}
