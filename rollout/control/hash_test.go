package control

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func simpleTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "demo"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
	}
}

func richTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "demo", "tier": "web", "pod-template-hash": "abc"},
			Annotations: map[string]string{"b": "2", "a": "1"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "nginx:1.27",
				Env:   []corev1.EnvVar{{Name: "X", Value: "y"}},
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
				}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)},
				}},
			}},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			NodeSelector:                  map[string]string{"zone": "a"},
		},
	}
}

// The wanted values were computed by k8s.io/kubernetes v1.37.2 pkg/controller.ComputeHash on the same
// templates; the integration test also checks a hash against a ReplicaSet kube-controller-manager created.
func TestComputeHash(t *testing.T) {
	tests := []struct {
		name     string
		template *corev1.PodTemplateSpec
		count    *int32
		want     string
	}{
		{name: "simple", template: simpleTemplate(), want: "86f5f8d6b4"},
		{name: "collision count 0 differs from nil", template: simpleTemplate(), count: ptr.To[int32](0), want: "fc8d4df76"},
		{name: "collision count 1", template: simpleTemplate(), count: ptr.To[int32](1), want: "69858c57b9"},
		{name: "collision count 7", template: simpleTemplate(), count: ptr.To[int32](7), want: "7c47557cf9"},
		{name: "maps, pointers, quantities", template: richTemplate(), want: "57d649f996"},
		{name: "rich with collision count 300", template: richTemplate(), count: ptr.To[int32](300), want: "79f4fdcf55"},
		{name: "empty template", template: &corev1.PodTemplateSpec{}, want: "54f4c57dcb"},
		{name: "nil template hashes as empty", template: nil, want: "54f4c57dcb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ComputeHash(tt.template, tt.count); got != tt.want {
				t.Errorf("ComputeHash() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	withHash := func(t *corev1.PodTemplateSpec, h string) *corev1.PodTemplateSpec {
		t.Labels["pod-template-hash"] = h
		return t
	}
	onlyHash := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pod-template-hash": "x"}}}
	otherImage := simpleTemplate()
	otherImage.Spec.Containers[0].Image = "nginx:1.28"
	tests := []struct {
		name string
		a, b *corev1.PodTemplateSpec
		want bool
	}{
		{name: "same", a: simpleTemplate(), b: simpleTemplate(), want: true},
		{name: "hash label ignored", a: withHash(simpleTemplate(), "a"), b: withHash(simpleTemplate(), "b"), want: true},
		{name: "hash label on one side", a: withHash(simpleTemplate(), "a"), b: simpleTemplate(), want: true},
		{name: "only a hash label equals no labels", a: onlyHash, b: &corev1.PodTemplateSpec{}, want: true},
		{name: "different image", a: simpleTemplate(), b: otherImage, want: false},
		{name: "other label differs", a: simpleTemplate(), b: richTemplate(), want: false},
		{name: "nil and nil", want: true},
		{name: "nil and template", a: simpleTemplate(), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EqualIgnoreHash(tt.a, tt.b); got != tt.want {
				t.Errorf("EqualIgnoreHash() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEqualIgnoreHashLeavesInputs(t *testing.T) {
	a := richTemplate()
	EqualIgnoreHash(a, simpleTemplate())
	if a.Labels["pod-template-hash"] != "abc" {
		t.Errorf("EqualIgnoreHash changed its input: labels %v", a.Labels)
	}
}
