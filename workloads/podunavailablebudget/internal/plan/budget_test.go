package plan

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

func TestDesiredAvailable(t *testing.T) {
	i, s := intstr.FromInt32, intstr.FromString
	cases := []struct {
		name           string
		maxUnavailable *intstr.IntOrString
		minAvailable   *intstr.IntOrString
		total          int32
		want           int32
		wantErr        string
	}{
		{name: "maxUnavailable 1 of 10", maxUnavailable: ptr(i(1)), total: 10, want: 9},
		{name: "maxUnavailable 25% of 10 rounds up to 3", maxUnavailable: ptr(s("25%")), total: 10, want: 7},
		{name: "maxUnavailable 0", maxUnavailable: ptr(i(0)), total: 10, want: 10},
		{name: "maxUnavailable above total wants none", maxUnavailable: ptr(i(12)), total: 10, want: 0},
		{name: "maxUnavailable 100%", maxUnavailable: ptr(s("100%")), total: 10, want: 0},
		{name: "no replicas", maxUnavailable: ptr(i(1)), total: 0, want: 0},
		{name: "minAvailable 8", minAvailable: ptr(i(8)), total: 10, want: 8},
		{name: "minAvailable above total is kept, as upstream", minAvailable: ptr(i(12)), total: 10, want: 12},
		{name: "minAvailable 55% of 10 rounds up to 6", minAvailable: ptr(s("55%")), total: 10, want: 6},
		{name: "neither wants none", total: 10, want: 0},
		{name: "unreadable maxUnavailable", maxUnavailable: ptr(s("half")), total: 10, wantErr: "spec.maxUnavailable: invalid value for IntOrString"},
		{name: "unreadable minAvailable", minAvailable: ptr(s("x%")), total: 10, wantErr: "spec.minAvailable: invalid value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &kruisepolicyv1alpha1.PodUnavailableBudgetSpec{MaxUnavailable: tc.maxUnavailable, MinAvailable: tc.minAvailable}
			got, err := DesiredAvailable(spec, tc.total)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("DesiredAvailable = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestTotalOverride(t *testing.T) {
	for value, want := range map[string]struct {
		n  int32
		ok bool
	}{"": {}, "10": {10, true}, "0": {0, true}, "-1": {}, "ten": {}, "99999999999": {}} {
		pub := maxUnavailable(intstr.FromInt32(1))
		if value != "" {
			pub.Annotations = map[string]string{kruisepolicyv1alpha1.PubProtectTotalReplicasAnnotation: value}
		}
		if n, ok := TotalOverride(pub); n != want.n || ok != want.ok {
			t.Errorf("TotalOverride(%q) = %d, %v; want %d, %v", value, n, ok, want.n, want.ok)
		}
	}
}

func TestProtects(t *testing.T) {
	del, upd, evict := kruisepolicyv1alpha1.PubDeleteOperation, kruisepolicyv1alpha1.PubUpdateOperation, kruisepolicyv1alpha1.PubEvictOperation
	cases := []struct {
		annotation string
		set        bool
		want       map[kruisepolicyv1alpha1.PubOperation]bool
	}{
		{set: false, want: map[kruisepolicyv1alpha1.PubOperation]bool{del: true, upd: true, evict: true, kruisepolicyv1alpha1.PubResizeOperation: false}},
		{annotation: "", set: true, want: map[kruisepolicyv1alpha1.PubOperation]bool{del: true, upd: true, evict: true}},
		{annotation: "DELETE,EVICT", set: true, want: map[kruisepolicyv1alpha1.PubOperation]bool{del: true, upd: false, evict: true}},
		{annotation: " UPDATE ", set: true, want: map[kruisepolicyv1alpha1.PubOperation]bool{del: false, upd: true, evict: false}},
	}
	for _, tc := range cases {
		pub := maxUnavailable(intstr.FromInt32(1))
		if tc.set {
			pub.Annotations = map[string]string{kruisepolicyv1alpha1.PubProtectOperationAnnotation: tc.annotation}
		}
		for op, want := range tc.want {
			if got := Protects(pub, op); got != want {
				t.Errorf("annotation %q (set %v): Protects(%s) = %v, want %v", tc.annotation, tc.set, op, got, want)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }
