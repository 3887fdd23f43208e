package admission

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

// req is a requirement on label a.
func req(op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: "a", Operator: op, Values: values}
}

func exprs(rs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: rs}
}

// TestLooselyOverlap follows upstream's table of overlapping requirements on one key.
func TestLooselyOverlap(t *testing.T) {
	in, notIn, exists, absent := metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist
	cases := []struct {
		name string
		a, b *metav1.LabelSelector
		want bool
	}{
		{"the same labels", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, true},
		{"different values", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}, false},
		{"different keys never conflict", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}, false},
		{"a key more on one side", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "v": "1"}}, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, false},
		{"In and Exists", exprs(req(in, "b", "c")), exprs(req(exists)), true},
		{"In and In sharing a value", exprs(req(in, "b", "c")), exprs(req(in, "c", "d")), true},
		{"In and NotIn of some of its values", exprs(req(in, "b", "c")), exprs(req(notIn, "b")), true},
		{"In and NotIn of all its values", exprs(req(in, "b", "c")), exprs(req(notIn, "b", "c", "e")), false},
		{"Exists and NotIn", exprs(req(exists)), exprs(req(notIn, "b")), true},
		{"Exists and DoesNotExist", exprs(req(exists)), exprs(req(absent)), false},
		{"NotIn and DoesNotExist", exprs(req(notIn, "b")), exprs(req(absent)), true},
		{"DoesNotExist and In", exprs(req(absent)), exprs(req(in, "b")), false},
		{"DoesNotExist twice", exprs(req(absent)), exprs(req(absent)), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, back := looselyOverlap(tc.a, tc.b), looselyOverlap(tc.b, tc.a); got != tc.want || back != tc.want {
				t.Errorf("looselyOverlap = %v (reversed %v), want %v", got, back, tc.want)
			}
		})
	}
}

func TestConflicts(t *testing.T) {
	other := func(name string, p *pub) kruisepolicyv1alpha1.PodUnavailableBudget {
		p.Name = name
		return *p
	}
	sameWorkloadOtherVersion := targeting()
	sameWorkloadOtherVersion.Spec.TargetReference.APIVersion = "apps.kruise.io/v1beta1"
	otherWorkload := targeting()
	otherWorkload.Spec.TargetReference.Name = "api"
	cases := []struct {
		name   string
		pub    *pub
		others []kruisepolicyv1alpha1.PodUnavailableBudget
		want   string
	}{
		{name: "alone", pub: selecting(), others: []kruisepolicyv1alpha1.PodUnavailableBudget{*selecting()}},
		{name: "the same selector", pub: selecting(), others: []kruisepolicyv1alpha1.PodUnavailableBudget{other("first", selecting())},
			want: "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\"}}: in conflict with PodUnavailableBudget first, whose selector overlaps"},
		{name: "the same workload in another version", pub: targeting(), others: []kruisepolicyv1alpha1.PodUnavailableBudget{other("first", sameWorkloadOtherVersion)},
			want: `spec.targetRef: Invalid value: "apps.kruise.io/v1alpha1 CloneSet web": in conflict with PodUnavailableBudget first, which protects the same workload`},
		{name: "another workload", pub: targeting(), others: []kruisepolicyv1alpha1.PodUnavailableBudget{other("api", otherWorkload)}},
		{name: "a selector and a workload", pub: selecting(), others: []kruisepolicyv1alpha1.PodUnavailableBudget{other("first", targeting())}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := Conflicts(tc.pub, tc.others)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Errorf("conflicts %v", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("conflicts %v, want %q", errs, tc.want)
			}
		})
	}
}
