package podtemplate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestValidateJob(t *testing.T) {
	job := func(mutate func(*corev1.PodSpec)) *corev1.PodTemplateSpec {
		t := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		mutate(&t.Spec)
		return t
	}
	tests := []struct {
		name   string
		spec   func(*corev1.PodSpec)
		errors string
	}{
		{name: "Never", spec: func(*corev1.PodSpec) {}},
		{name: "OnFailure, with a deadline", spec: func(s *corev1.PodSpec) {
			s.RestartPolicy, s.ActiveDeadlineSeconds = corev1.RestartPolicyOnFailure, ptr.To[int64](20)
		}},
		{name: "Always never completes", spec: func(s *corev1.PodSpec) { s.RestartPolicy = corev1.RestartPolicyAlways },
			errors: `t.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`},
		{name: "unset is Always once defaulted, and refused before", spec: func(s *corev1.PodSpec) { s.RestartPolicy = "" },
			errors: `t.spec.restartPolicy: Unsupported value: "": supported values: "OnFailure", "Never"`},
		{name: "structure as for every workload", spec: func(s *corev1.PodSpec) { s.Containers[0].Image = "" },
			errors: `t.spec.containers[0].image: Required value`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range ValidateJob(job(tc.spec), field.NewPath("t")) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "; ") != tc.errors {
				t.Errorf("errors %q, want %q", got, tc.errors)
			}
		})
	}
}
