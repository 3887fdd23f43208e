package admission

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const csUID types.UID = "cs-uid"

// cloneSet is a small valid CloneSet, defaulted as the mutating webhook leaves it.
func cloneSet() *kruiseappsv1alpha1.CloneSet {
	cs := &kruiseappsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: csUID},
		Spec: kruiseappsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "main", Image: "nginx:1", Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
				}}},
			},
		},
	}
	Default(cs)
	return cs
}

// pod is a pod of the CloneSet named name.
func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: csUID, Controller: ptr.To(true),
		}},
	}}
}

func podMap(pods ...*corev1.Pod) map[string]*corev1.Pod {
	m := map[string]*corev1.Pod{}
	for _, p := range pods {
		m[p.Name] = p
	}
	return m
}

func jsonOf(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
