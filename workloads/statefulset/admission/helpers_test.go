package admission

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// set is a small valid Parallel set with a claim template, defaulted as the mutating webhook leaves it.
func set() *kruiseappsv1beta1.StatefulSet {
	s := &kruiseappsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: kruiseappsv1beta1.StatefulSetSpec{
			Replicas:            ptr.To[int32](3),
			ServiceName:         "web",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claimTemplate("data", "1Gi")},
		},
	}
	Default(s, allGates)
	return s
}

func claimTemplate(name, size string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}}
}

// expectOneError requires exactly one error, of type typ at path.
func expectOneError(t *testing.T, errs field.ErrorList, typ field.ErrorType, path string) {
	t.Helper()
	if len(errs) != 1 {
		t.Fatalf("want one %s error at %s, got %d: %v", typ, path, len(errs), errs)
	}
	if errs[0].Type != typ || errs[0].Field != path {
		t.Fatalf("want %s at %s, got %s at %s: %v", typ, path, errs[0].Type, errs[0].Field, errs[0])
	}
}
