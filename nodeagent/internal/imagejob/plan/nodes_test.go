package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestSelectNodes(t *testing.T) {
	deleting := node("d-deleting", map[string]string{"zone": "a"})
	deleting.DeletionTimestamp = mtime(0)
	all := []*kruiseappsv1alpha1.NodeImage{node("c", map[string]string{"zone": "b"}), node("a", map[string]string{"zone": "a"}),
		node("b", map[string]string{"zone": "a"}), deleting}
	podNodes := map[string]bool{"c": true, "gone": true}
	for _, tc := range []struct {
		name string
		t    kruiseappsv1alpha1.ImagePullJobTemplate
		want []string
	}{
		{"every node without a selector", kruiseappsv1alpha1.ImagePullJobTemplate{}, []string{"a", "b", "c"}},
		{"by names", kruiseappsv1alpha1.ImagePullJobTemplate{Selector: &kruiseappsv1alpha1.ImagePullJobNodeSelector{Names: []string{"c", "a", "x"}}},
			[]string{"a", "c"}},
		{"by the nodes' labels", kruiseappsv1alpha1.ImagePullJobTemplate{Selector: &kruiseappsv1alpha1.ImagePullJobNodeSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}}}, []string{"a", "b"}},
		{"the nodes of the pods", kruiseappsv1alpha1.ImagePullJobTemplate{PodSelector: &kruiseappsv1alpha1.ImagePullJobPodSelector{}}, []string{"c"}},
	} {
		job := pullJob(1)
		job.Spec.ImagePullJobTemplate = tc.t
		got, err := SelectNodes(job, all, podNodes)
		var names []string
		for _, ni := range got {
			names = append(names, ni.Name)
		}
		if err != nil || !cmp.Equal(names, tc.want) {
			t.Errorf("%s: SelectNodes = %v, %v; want %v", tc.name, names, err, tc.want)
		}
	}
	bad := pullJob(1)
	bad.Spec.Selector = &kruiseappsv1alpha1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Near"}}}}
	if _, err := SelectNodes(bad, all, nil); err == nil {
		t.Error("an unreadable selector was accepted")
	}
}
