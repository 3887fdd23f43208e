package inplaceupdate

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

func template(image string, labels map[string]string, mutate ...func(*corev1.PodSpec)) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: image, Env: []corev1.EnvVar{{Name: "VERSION", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['version']"}}}}},
			{Name: "sidecar", Image: "sidecar:1"},
		}},
	}
	for _, m := range mutate {
		m(&t.Spec)
	}
	return t
}

func TestCalculate(t *testing.T) {
	base := template("app:1", map[string]string{"app": "a", "version": "1"})
	cases := []struct {
		name    string
		newT    *corev1.PodTemplateSpec
		inPlace bool
		want    *Spec
	}{
		{name: "image", newT: template("app:2", map[string]string{"app": "a", "version": "1"}), inPlace: true,
			want: &Spec{ContainerImages: map[string]string{"app": "app:2"}, Labels: map[string]string{}, Annotations: map[string]string{}}},
		{name: "label read by env", newT: template("app:1", map[string]string{"app": "a", "version": "2"}), inPlace: true,
			want: &Spec{ContainerImages: map[string]string{}, Labels: map[string]string{"version": "2"}, Annotations: map[string]string{},
				EnvFromMetadata: []string{"app"}}},
		{name: "label removed", newT: template("app:1", map[string]string{"app": "a"}), inPlace: true,
			want: &Spec{ContainerImages: map[string]string{}, Labels: map[string]string{}, RemovedLabels: []string{"version"},
				Annotations: map[string]string{}, EnvFromMetadata: []string{"app"}}},
		{name: "env change recreates", newT: template("app:2", base.Labels, func(s *corev1.PodSpec) {
			s.Containers[1].Env = []corev1.EnvVar{{Name: "X", Value: "y"}}
		})},
		{name: "container added recreates", newT: template("app:1", base.Labels, func(s *corev1.PodSpec) {
			s.Containers = append(s.Containers, corev1.Container{Name: "third", Image: "x"})
		})},
		{name: "container renamed recreates", newT: template("app:1", base.Labels, func(s *corev1.PodSpec) { s.Containers[1].Name = "other" })},
		{name: "pod field recreates", newT: template("app:1", base.Labels, func(s *corev1.PodSpec) { s.NodeName = "n" })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Calculate(base, tc.newT)
			if ok != tc.inPlace {
				t.Fatalf("in place = %v, want %v", ok, tc.inPlace)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func runningPod() *corev1.Pod {
	const imageID = "app@1"
	const image = "app:1"
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "a", "version": "1"}},
		Spec:       template(image, nil).Spec,
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", Image: image, ImageID: imageID}, {Name: "sidecar", Image: "sidecar:1", ImageID: "sidecar@1"},
		}},
	}
	InjectGate(p)
	return p
}

func TestApplyThenComplete(t *testing.T) {
	pod := runningPod()
	spec, ok := Calculate(template("app:1", pod.Labels), template("app:2", map[string]string{"app": "a", "version": "2"}))
	if !ok {
		t.Fatal("image and label change must be in place")
	}
	now := metav1.Now()
	if !SetReady(pod, false, now) || Ready(pod) {
		t.Fatal("SetReady(false) must change the pod and make it not ready")
	}
	if err := Apply(pod, spec, "rev-2", now); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Containers[0].Image != "app:2" || pod.Labels["version"] != "2" {
		t.Fatalf("pod not updated: image %s, labels %v", pod.Spec.Containers[0].Image, pod.Labels)
	}
	state, err := kruiseappspub.ParseInPlaceUpdateState(pod)
	if err != nil || state.Revision != "rev-2" || state.LastContainerStatuses["app"].ImageID != "app@1" {
		t.Fatalf("state = %+v, %v", state, err)
	}
	if done, _ := Completed(pod); done {
		t.Fatal("completed before the container restarted")
	}
	pod.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "app", Image: "app:2", ImageID: "app@2", RestartCount: 1}
	if done, err := Completed(pod); !done || err != nil {
		t.Fatalf("Completed = %v, %v after the restart", done, err)
	}
	if !SetReady(pod, true, now) || !Ready(pod) || SetReady(pod, true, now) {
		t.Fatal("SetReady(true) must change once and make the pod ready")
	}
}

func TestCompletedEdgeCases(t *testing.T) {
	noState := runningPod()
	if done, err := Completed(noState); !done || err != nil {
		t.Fatalf("a pod without state has nothing pending: %v %v", done, err)
	}
	bad := runningPod()
	bad.Annotations = map[string]string{kruiseappspub.InPlaceUpdateStateKey: "{"}
	if _, err := Completed(bad); err == nil {
		t.Fatal("malformed state must be an error")
	}
}

func TestInjectGateOnce(t *testing.T) {
	pod := &corev1.Pod{}
	if !InjectGate(pod) || InjectGate(pod) {
		t.Fatal("the gate must be added exactly once")
	}
	if spec := pod.Spec; len(spec.ReadinessGates) != 1 || !slices.ContainsFunc(spec.ReadinessGates, func(g corev1.PodReadinessGate) bool {
		return g.ConditionType == kruiseappspub.InPlaceUpdateReady
	}) {
		t.Fatalf("gates = %v", pod.Spec.ReadinessGates)
	}
}
