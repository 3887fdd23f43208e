package inject

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func sidecarSet(name string, mutate ...func(*kruiseappsv1alpha1.SidecarSet)) *kruiseappsv1alpha1.SidecarSet {
	s := &kruiseappsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kruiseappsv1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []kruiseappsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: name, Image: name + ":v1"}}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func webPod(ns string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:v1"}}},
	}
}

func TestMatches(t *testing.T) {
	web := map[string]string{"app": "web"}
	cases := []struct {
		name     string
		set      *kruiseappsv1alpha1.SidecarSet
		pod      *corev1.Pod
		nsLabels map[string]string
		want     bool
		wantErr  bool
	}{
		{name: "selector matches", set: sidecarSet("s"), pod: webPod("shop", web), want: true},
		{name: "selector does not match", set: sidecarSet("s"), pod: webPod("shop", map[string]string{"app": "db"})},
		{name: "empty selector matches no pod", set: sidecarSet("s", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.Selector = &metav1.LabelSelector{}
		}), pod: webPod("shop", web)},
		{name: "missing selector matches no pod", set: sidecarSet("s", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.Selector = nil
		}), pod: webPod("shop", web)},
		{name: "invalid selector is an error", set: sidecarSet("s", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
		}), pod: webPod("shop", web), wantErr: true},
		{name: "kube-system is ignored", set: sidecarSet("s"), pod: webPod("kube-system", web)},
		{name: "kube-public is ignored", set: sidecarSet("s"), pod: webPod("kube-public", web)},
		{name: "spec.namespace equal", set: sidecarSet("s", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Namespace = "shop" }),
			pod: webPod("shop", web), want: true},
		{name: "spec.namespace other", set: sidecarSet("s", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Namespace = "shop" }),
			pod: webPod("bank", web)},
		{name: "pod without namespace is in default", set: sidecarSet("s", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Namespace = "default" }),
			pod: webPod("", web), want: true},
		{name: "namespaceSelector matches", set: sidecarSet("s", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "on"}}
		}), pod: webPod("shop", web), nsLabels: map[string]string{"mesh": "on"}, want: true},
		{name: "namespaceSelector does not match", set: sidecarSet("s", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "on"}}
		}), pod: webPod("shop", web), nsLabels: map[string]string{"mesh": "off"}},
		{name: "empty namespaceSelector matches every namespace", set: sidecarSet("s", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{}
		}), pod: webPod("shop", web), want: true},
		{name: "invalid namespaceSelector is an error", set: sidecarSet("s", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"in valid": "x"}}
		}), pod: webPod("shop", web), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Matches(tc.set, tc.pod, tc.nsLabels)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	paused := func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true }
	canaryOf := func(base string) func(*kruiseappsv1alpha1.SidecarSet) {
		return func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Annotations = map[string]string{
				kruiseappsv1alpha1.SidecarSetCanaryAnnotation: "true",
				kruiseappsv1alpha1.SidecarSetBaseAnnotation:   base,
			}
		}
	}
	otherPods := func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	}
	cases := []struct {
		name string
		sets []*kruiseappsv1alpha1.SidecarSet
		want []string
	}{
		{name: "sorted by name", sets: []*kruiseappsv1alpha1.SidecarSet{sidecarSet("c"), sidecarSet("a"), sidecarSet("b")},
			want: []string{"a", "b", "c"}},
		{name: "paused skipped", sets: []*kruiseappsv1alpha1.SidecarSet{sidecarSet("a", paused), sidecarSet("b")}, want: []string{"b"}},
		{name: "non-matching skipped", sets: []*kruiseappsv1alpha1.SidecarSet{sidecarSet("a", otherPods), sidecarSet("b")}, want: []string{"b"}},
		{name: "canary replaces base", sets: []*kruiseappsv1alpha1.SidecarSet{sidecarSet("envoy"), sidecarSet("envoy-canary", canaryOf("envoy"))},
			want: []string{"envoy-canary"}},
		{name: "non-matching canary leaves base", sets: []*kruiseappsv1alpha1.SidecarSet{sidecarSet("envoy"), sidecarSet("envoy-canary", canaryOf("envoy"), otherPods)},
			want: []string{"envoy"}},
		{name: "paused canary leaves base", sets: []*kruiseappsv1alpha1.SidecarSet{sidecarSet("envoy"), sidecarSet("envoy-canary", canaryOf("envoy"), paused)},
			want: []string{"envoy"}},
		{name: "canary of itself is no canary", sets: []*kruiseappsv1alpha1.SidecarSet{sidecarSet("envoy", canaryOf("envoy"))},
			want: []string{"envoy"}},
		{name: "canary annotation without true is no canary", sets: []*kruiseappsv1alpha1.SidecarSet{sidecarSet("envoy"), sidecarSet("envoy-canary", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Annotations = map[string]string{kruiseappsv1alpha1.SidecarSetBaseAnnotation: "envoy"}
		})}, want: []string{"envoy", "envoy-canary"}},
		{name: "nil entries ignored", sets: []*kruiseappsv1alpha1.SidecarSet{nil, sidecarSet("a")}, want: []string{"a"}},
		{name: "none", want: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Select(tc.sets, webPod("shop", map[string]string{"app": "web"}), nil)
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, s := range got {
				names = append(names, s.Name)
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("Select = %v, want %v", names, tc.want)
			}
		})
	}
}

func TestSelectReportsTheSetWithABadSelector(t *testing.T) {
	bad := sidecarSet("bad", func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	})
	_, err := Select([]*kruiseappsv1alpha1.SidecarSet{sidecarSet("a"), bad}, webPod("shop", map[string]string{"app": "web"}), nil)
	if err == nil || !containsAll(err.Error(), "SidecarSet bad", "spec.selector") {
		t.Errorf("error %v, want one naming SidecarSet bad and spec.selector", err)
	}
}
