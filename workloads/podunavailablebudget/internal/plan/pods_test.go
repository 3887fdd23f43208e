package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

// updating is a pod whose in-place update to app:v2 started and whose container still runs app:v1.
func updating(p *corev1.Pod) {
	p.Spec.Containers[0].Image = "web:v2"
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "web:v1", ImageID: "web@sha256:1"}}
	annotated(kruiseappspub.InPlaceUpdateStateKey,
		`{"revision":"r2","updateTimestamp":"2026-05-01T11:59:00Z","lastContainerStatuses":{"app":{"imageID":"web@sha256:1"}}}`)(p)
}

func digest(spec, running string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "pinned", Image: "reg.example/pinned@sha256:" + spec})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses,
			corev1.ContainerStatus{Name: "pinned", ImageID: "reg.example/pinned@sha256:" + running})
	}
}

func TestPodExemption(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{name: "a ready pod counts", pod: readyPod("a")},
		{name: "no-protect opts out", pod: readyPod("a", annotated(kruisepolicyv1alpha1.PodPubNoProtectionAnnotation, "true")),
			want: "the pod carries pub.kruise.io/no-protect"},
		{name: "no-protect false does not", pod: readyPod("a", annotated(kruisepolicyv1alpha1.PodPubNoProtectionAnnotation, "false"))},
		{name: "a terminating pod is already going", pod: readyPod("a", terminating), want: "the pod is being deleted"},
		{name: "a pod not ready costs nothing", pod: readyPod("a", notReady), want: "the pod is not ready"},
		{name: "a pending pod costs nothing", pod: readyPod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
			want: "the pod is not ready"},
		{name: "a pod labelled unavailable costs nothing", pod: readyPod("a", labelled("unavailable-pod.kruise.io/x", "")),
			want: "the pod is not ready"},
		{name: "a pod mid in-place update costs nothing", pod: readyPod("a", updating), want: "the pod does not run its spec yet"},
		{name: "a pinned image running elsewhere costs nothing", pod: readyPod("a", digest("aaa", "bbb")),
			want: "the pod does not run its spec yet"},
		{name: "a pinned image running as pinned counts", pod: readyPod("a", digest("aaa", "aaa"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodExemption(tc.pod); got != tc.want {
				t.Errorf("PodExemption = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRelatedBudget(t *testing.T) {
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{readyPod("a"), ""},
		{readyPod("a", annotated(kruisepolicyv1alpha1.PodRelatedPubAnnotation, "new")), "new"},
		{readyPod("a", annotated(kruisepolicyv1alpha1.PodRelatedPubAnnotationLegacy, "old")), "old"},
		{readyPod("a", annotated(kruisepolicyv1alpha1.PodRelatedPubAnnotationLegacy, "old"),
			annotated(kruisepolicyv1alpha1.PodRelatedPubAnnotation, "new")), "new"},
	} {
		if got := RelatedBudget(tc.pod); got != tc.want {
			t.Errorf("RelatedBudget(%v) = %q, want %q", tc.pod.Annotations, got, tc.want)
		}
	}
}

func TestUnavailableChanged(t *testing.T) {
	old := readyPod("a")
	cases := []struct {
		name    string
		updated *corev1.Pod
		want    bool
	}{
		{name: "metadata only", updated: readyPod("a", labelled("team", "x"), annotated("note", "y"))},
		{name: "a new image", updated: readyPod("a", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "web:v2" }), want: true},
		{name: "an unavailable label added", updated: readyPod("a", labelled("unavailable-pod.kruise.io/offline", "true")), want: true},
	}
	for _, tc := range cases {
		if got := UnavailableChanged(old, tc.updated); got != tc.want {
			t.Errorf("%s: UnavailableChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
	labelledOld := readyPod("a", labelled("unavailable-pod.kruise.io/offline", "true"))
	if UnavailableChanged(labelledOld, readyPod("a", labelled("unavailable-pod.kruise.io/offline", "again"))) {
		t.Error("a pod labelled unavailable before is not taken out again")
	}
}
