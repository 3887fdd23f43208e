package plan

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// cluster: the seed's ns-1 .. ns-4 (ns-2 and ns-3 in group test), the system namespaces and default.
var cluster = []Namespace{
	{Name: "default"}, {Name: "kube-system", Labels: map[string]string{"group": "test"}}, {Name: "kube-public"},
	{Name: "ns-1"}, {Name: "ns-2", Labels: map[string]string{"group": "test"}},
	{Name: "ns-3", Labels: map[string]string{"group": "test"}}, {Name: "ns-4", Terminating: true},
}

func TestTargets(t *testing.T) {
	group := metav1.LabelSelector{MatchLabels: map[string]string{"group": "test"}}
	for _, tc := range []struct {
		name    string
		targets kruiseappsv1alpha1.ResourceDistributionTargets
		want    []string
	}{
		{"nothing", kruiseappsv1alpha1.ResourceDistributionTargets{}, []string{}},
		{"all but the system namespaces", kruiseappsv1alpha1.ResourceDistributionTargets{AllNamespaces: true},
			[]string{"default", "ns-1", "ns-2", "ns-3", "ns-4"}},
		{"listed, existing or not", kruiseappsv1alpha1.ResourceDistributionTargets{IncludedNamespaces: kruiseappsv1alpha1.ResourceDistributionTargetNamespaces{List: names("ns-1", "ns-9")}},
			[]string{"ns-1", "ns-9"}},
		{"selected", kruiseappsv1alpha1.ResourceDistributionTargets{NamespaceLabelSelector: group}, []string{"ns-2", "ns-3"}},
		{"the seed's: listed or selected, minus excluded", kruiseappsv1alpha1.ResourceDistributionTargets{
			IncludedNamespaces:     kruiseappsv1alpha1.ResourceDistributionTargetNamespaces{List: names("ns-1", "ns-4")},
			NamespaceLabelSelector: group,
			ExcludedNamespaces:     kruiseappsv1alpha1.ResourceDistributionTargetNamespaces{List: names("ns-3")},
		}, []string{"ns-1", "ns-2", "ns-4"}},
		{"all minus excluded", kruiseappsv1alpha1.ResourceDistributionTargets{AllNamespaces: true,
			ExcludedNamespaces: kruiseappsv1alpha1.ResourceDistributionTargetNamespaces{List: names("default", "ns-2")}},
			[]string{"ns-1", "ns-3", "ns-4"}},
		{"all ignores a missing listed one", kruiseappsv1alpha1.ResourceDistributionTargets{AllNamespaces: true,
			IncludedNamespaces: kruiseappsv1alpha1.ResourceDistributionTargetNamespaces{List: names("ns-9")}},
			[]string{"default", "ns-1", "ns-2", "ns-3", "ns-4"}},
		{"system namespaces even when listed", kruiseappsv1alpha1.ResourceDistributionTargets{
			IncludedNamespaces: kruiseappsv1alpha1.ResourceDistributionTargetNamespaces{List: names("kube-system", "kube-public")}},
			[]string{}},
		{"excluded wins over listed", kruiseappsv1alpha1.ResourceDistributionTargets{
			IncludedNamespaces: kruiseappsv1alpha1.ResourceDistributionTargetNamespaces{List: names("ns-1")},
			ExcludedNamespaces: kruiseappsv1alpha1.ResourceDistributionTargetNamespaces{List: names("ns-1")}},
			[]string{}},
		{"a selector by expression", kruiseappsv1alpha1.ResourceDistributionTargets{NamespaceLabelSelector: metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "group", Operator: metav1.LabelSelectorOpDoesNotExist}}}},
			[]string{"default", "ns-1", "ns-4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Targets(&tc.targets, cluster)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("targets %v (%v), want %v", got, err, tc.want)
			}
			for _, ns := range cluster {
				if in := slices.Contains(got, ns.Name); Targeted(&tc.targets, ns) != in {
					t.Errorf("Targeted(%s) = %v, Targets says %v", ns.Name, !in, in)
				}
			}
		})
	}
}

func TestTargetsBadSelector(t *testing.T) {
	targets := kruiseappsv1alpha1.ResourceDistributionTargets{NamespaceLabelSelector: metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "group", Operator: "Near"}}}}
	if _, err := Targets(&targets, cluster); err == nil {
		t.Error("a bad selector was accepted")
	}
	if Targeted(&targets, cluster[0]) {
		t.Error("a bad selector targets a namespace")
	}
}
