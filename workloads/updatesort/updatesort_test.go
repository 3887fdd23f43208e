package updatesort

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestPriority(t *testing.T) {
	pods := func() []*corev1.Pod {
		return []*corev1.Pod{
			pod("a", map[string]string{"tier": "web"}),
			pod("b", map[string]string{"tier": "db", "zone": "z1"}),
			pod("c", map[string]string{"order": "pod-10"}),
			pod("d", map[string]string{"order": "pod-2"}),
			pod("e", nil),
		}
	}
	cases := []struct {
		name     string
		strategy *kruiseappspub.UpdatePriorityStrategy
		want     []string
	}{
		{name: "none keeps order", want: []string{"a", "b", "c", "d", "e"}},
		{name: "weights sum, higher first", strategy: &kruiseappspub.UpdatePriorityStrategy{WeightPriority: []kruiseappspub.UpdatePriorityWeightTerm{
			{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}},
			{Weight: 30, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}},
			{Weight: 10, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "z1"}}},
		}}, want: []string{"b", "a", "c", "d", "e"}},
		{name: "order key, trailing integer higher first", strategy: &kruiseappspub.UpdatePriorityStrategy{
			OrderPriority: []kruiseappspub.UpdatePriorityOrderTerm{{OrderedKey: "order"}},
		}, want: []string{"c", "d", "a", "b", "e"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := pods()
			Stable(p, NewPriority(tc.strategy))
			if got := names(p); !slices.Equal(got, tc.want) {
				t.Fatalf("order = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestScatterSpreadsMatchingPods(t *testing.T) {
	var pods []*corev1.Pod
	for i, zone := range []string{"a", "a", "a", "b", "b", "b"} {
		pods = append(pods, pod(string(rune('0'+i)), map[string]string{"zone": zone}))
	}
	got := Scatter(pods, kruiseappspub.UpdateScatterStrategy{{Key: "zone", Value: "a"}})
	want := []string{"0", "3", "1", "4", "2", "5"}
	if !slices.Equal(names(got), want) {
		t.Fatalf("scatter = %v, want %v", names(got), want)
	}
	if len(Scatter(pods, nil)) != len(pods) {
		t.Fatal("no terms must keep every pod")
	}
}
