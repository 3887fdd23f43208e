package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExecContainer(t *testing.T) {
	pod := func(annotations map[string]string, names ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: annotations}}
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		}
		return p
	}
	hot := map[string]string{workingHotUpgradeAnnotation: `{"envoy":"envoy-2"}`}
	cases := []struct {
		name               string
		pod                *corev1.Pod
		container, sidecar string
		want, wantNote     string
		wantErr            bool
	}{
		{name: "-S picks the working container of a hot-upgrade sidecar", pod: pod(hot, "envoy-1", "envoy-2", "app"),
			sidecar: "envoy", want: "envoy-2", wantNote: "Enter working container envoy-2 of SidecarSet."},
		{name: "-S wins over -c", pod: pod(hot, "envoy-1", "envoy-2", "app"), sidecar: "envoy", container: "app",
			want: "envoy-2", wantNote: "Enter working container envoy-2 of SidecarSet."},
		{name: "-S of a cold sidecar is its container", pod: pod(nil, "scs", "app"), sidecar: "scs", want: "scs"},
		{name: "-S of no sidecar", pod: pod(hot, "app"), sidecar: "mesh", wantErr: true},
		{name: "an unreadable record counts as none", pod: pod(map[string]string{workingHotUpgradeAnnotation: "{"}, "envoy-1"),
			sidecar: "envoy", wantErr: true},
		{name: "-c", pod: pod(nil, "a", "b"), container: "b", want: "b"},
		{name: "kubectl's default container", pod: pod(map[string]string{defaultContainerAnnotation: "b"}, "a", "b"), want: "b"},
		{name: "else the first, said", pod: pod(nil, "a", "b"), want: "a", wantNote: `Defaulted container "a" out of: a, b.`},
		{name: "a lone container needs no note", pod: pod(nil, "a"), want: "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, note, err := execContainer(tc.pod, tc.container, tc.sidecar)
			if (err != nil) != tc.wantErr || got != tc.want || note != tc.wantNote {
				t.Errorf("got %q, note %q, err %v; want %q, %q, error %v", got, note, err, tc.want, tc.wantNote, tc.wantErr)
			}
		})
	}
	done := pod(nil, "a")
	done.Status.Phase = corev1.PodSucceeded
	if _, _, err := execContainer(done, "", ""); err == nil {
		t.Error("a completed pod is not refused")
	}
}
