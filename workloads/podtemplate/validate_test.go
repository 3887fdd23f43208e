package podtemplate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidate(t *testing.T) {
	valid := func() *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
			Spec: corev1.PodSpec{
				Volumes:    []corev1.Volume{{Name: "conf"}},
				Containers: []corev1.Container{{Name: "main", Image: "a:1", VolumeMounts: []corev1.VolumeMount{{Name: "conf"}, {Name: "data"}}}},
			},
		}
	}
	claims := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	tests := []struct {
		name   string
		mutate func(*corev1.PodTemplateSpec)
		claims []corev1.PersistentVolumeClaim
		want   string
	}{
		{"valid, a mount of a claim template", func(*corev1.PodTemplateSpec) {}, claims, ""},
		{"a mount of no volume", func(*corev1.PodTemplateSpec) {}, nil, `spec.template.spec.containers[0].volumeMounts[1].name: Not found: "data"`},
		{"a claim named like a volume", func(t *corev1.PodTemplateSpec) { t.Spec.Volumes[0].Name = "data" }, claims,
			`spec.volumeClaimTemplates[0].metadata.name: Duplicate value: "data"`},
		{"an init container named like a container", func(t *corev1.PodTemplateSpec) {
			t.Spec.InitContainers = []corev1.Container{{Name: "main", Image: "b:1"}}
		}, claims, `spec.template.spec.containers[0].name: Duplicate value: "main"`},
		{"no image", func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "" }, claims, "spec.template.spec.containers[0].image: Required value"},
		{"no container", func(t *corev1.PodTemplateSpec) { t.Spec.Containers = nil }, nil, "spec.template.spec.containers: Required value"},
		{"a bad label", func(t *corev1.PodTemplateSpec) { t.Labels["bad key"] = "x" }, claims, "spec.template.metadata.labels: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := valid()
			tt.mutate(tmpl)
			errs := Validate(tmpl, field.NewPath("spec", "template"), tt.claims, field.NewPath("spec", "volumeClaimTemplates"))
			got := errs.ToAggregate()
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("unexpected errors: %v", got)
			case tt.want != "" && (got == nil || !strings.Contains(got.Error(), tt.want)):
				t.Errorf("errors %v, want one containing %q", got, tt.want)
			}
		})
	}
}
