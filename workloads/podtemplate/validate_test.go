package podtemplate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestValidate(t *testing.T) {
	valid := func() *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}},
		}
	}
	claims := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	for _, tc := range []struct {
		name   string
		change func(*corev1.PodTemplateSpec, *[]corev1.PersistentVolumeClaim)
		path   string
		detail string
	}{
		{name: "valid, the mount naming a claim template", change: func(*corev1.PodTemplateSpec, *[]corev1.PersistentVolumeClaim) {}},
		{name: "restartPolicy Never", path: "spec.template.spec.restartPolicy",
			change: func(t *corev1.PodTemplateSpec, _ *[]corev1.PersistentVolumeClaim) {
				t.Spec.RestartPolicy = corev1.RestartPolicyNever
			}},
		{name: "activeDeadlineSeconds names the kind", path: "spec.template.spec.activeDeadlineSeconds", detail: "activeDeadlineSeconds in StatefulSet is not Supported",
			change: func(t *corev1.PodTemplateSpec, _ *[]corev1.PersistentVolumeClaim) {
				t.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
			}},
		{name: "no containers", path: "spec.template.spec.containers",
			change: func(t *corev1.PodTemplateSpec, c *[]corev1.PersistentVolumeClaim) { t.Spec.Containers = nil; *c = nil }},
		{name: "a mount of no volume", path: "spec.template.spec.containers[0].volumeMounts[0].name",
			change: func(_ *corev1.PodTemplateSpec, c *[]corev1.PersistentVolumeClaim) { *c = nil }},
		{name: "a volume named like a claim template", path: "spec.volumeClaimTemplates[0].metadata.name",
			change: func(t *corev1.PodTemplateSpec, _ *[]corev1.PersistentVolumeClaim) {
				t.Spec.Volumes = []corev1.Volume{{Name: "data"}}
			}},
		{name: "an init container named like a container", path: "spec.template.spec.containers[0].name",
			change: func(t *corev1.PodTemplateSpec, _ *[]corev1.PersistentVolumeClaim) {
				t.Spec.InitContainers = []corev1.Container{{Name: "main", Image: "busybox"}}
			}},
		{name: "a bad label", path: "spec.template.metadata.labels",
			change: func(t *corev1.PodTemplateSpec, _ *[]corev1.PersistentVolumeClaim) { t.Labels["a b"] = "c" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, cs := valid(), claims
			tc.change(tmpl, &cs)
			errs := Validate(tmpl, cs, "StatefulSet", field.NewPath("spec", "template"), field.NewPath("spec", "volumeClaimTemplates"))
			if tc.path == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.path || (tc.detail != "" && errs[0].Detail != tc.detail) {
				t.Errorf("errors %v, want one at %s %s", errs, tc.path, tc.detail)
			}
		})
	}
}

func TestDefaultClaimTemplate(t *testing.T) {
	c := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("0.0001")}}}}
	DefaultClaimTemplate(c)
	if c.Status.Phase != corev1.ClaimPending || c.Spec.Resources.Requests.Storage().String() != "1m" || c.Spec.VolumeMode != nil {
		t.Errorf("defaulted claim %+v", c)
	}
	DefaultClaimTemplate(nil)
}

func TestFirstNonImageDifference(t *testing.T) {
	p := field.NewPath("spec", "template", "spec")
	old := &corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "x:1"}}}
	images := &corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "x:2"}}}
	if d := FirstNonImageDifference(old, images, p); d != nil {
		t.Errorf("an image change: %v", d)
	}
	env := images.DeepCopy()
	env.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
	if d := FirstNonImageDifference(old, env, p); d == nil || d.String() != "spec.template.spec.containers[0].env" {
		t.Errorf("an env change: %v", d)
	}
	more := images.DeepCopy()
	more.Containers = append(more.Containers, corev1.Container{Name: "b", Image: "y"})
	if d := FirstNonImageDifference(old, more, p); d == nil || d.String() != "spec.template.spec.containers" {
		t.Errorf("a container added: %v", d)
	}
}
