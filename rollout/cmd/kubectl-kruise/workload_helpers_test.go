package main

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// toUnstructured converts a typed object, as the dynamic client would return it.
func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// testTemplate has an init container and two containers, one with an environment.
func testTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1"}},
			Containers: []corev1.Container{
				{Name: "web", Image: "nginx:1", Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}},
				{Name: "sidecar", Image: "envoy:1"},
			},
		},
	}
}

var testSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}

func testObjectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "web", Namespace: "apps", UID: "uid-web", ResourceVersion: "7"}
}

func testCloneSet(t *testing.T, mutate ...func(*kruiseappsv1alpha1.CloneSet)) *unstructured.Unstructured {
	cs := &kruiseappsv1alpha1.CloneSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet"},
		ObjectMeta: testObjectMeta(),
		Spec:       kruiseappsv1alpha1.CloneSetSpec{Replicas: ptr.To[int32](5), Selector: testSelector, Template: testTemplate()},
	}
	for _, m := range mutate {
		m(cs)
	}
	return toUnstructured(t, cs)
}

func testAdvancedStatefulSet(t *testing.T, paused bool) *unstructured.Unstructured {
	sts := &kruiseappsv1beta1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet"},
		ObjectMeta: testObjectMeta(),
		Spec: kruiseappsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](3), Selector: testSelector, Template: testTemplate(),
			UpdateStrategy: kruiseappsv1beta1.StatefulSetUpdateStrategy{RollingUpdate: &kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{Paused: paused}}},
	}
	return toUnstructured(t, sts)
}

func testAdvancedDaemonSet(t *testing.T, paused *bool) *unstructured.Unstructured {
	ds := &kruiseappsv1alpha1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet"},
		ObjectMeta: testObjectMeta(),
		Spec: kruiseappsv1alpha1.DaemonSetSpec{Selector: testSelector, Template: testTemplate(),
			UpdateStrategy: kruiseappsv1alpha1.DaemonSetUpdateStrategy{RollingUpdate: &kruiseappsv1alpha1.RollingUpdateDaemonSet{Paused: paused}}},
	}
	return toUnstructured(t, ds)
}

func testDeployment(t *testing.T, mutate ...func(*appsv1.Deployment)) *unstructured.Unstructured {
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: testObjectMeta(),
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: testSelector, Template: testTemplate()},
	}
	for _, m := range mutate {
		m(d)
	}
	return toUnstructured(t, d)
}

func testStatefulSet(t *testing.T) *unstructured.Unstructured {
	s := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: testObjectMeta(),
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Selector: testSelector, Template: testTemplate()},
	}
	return toUnstructured(t, s)
}

// containersOf decodes the template of a planned preview.
func containersOf(t *testing.T, obj *unstructured.Unstructured) corev1.PodSpec {
	t.Helper()
	tmpl, err := podTemplate(obj)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl.Spec
}

func unstructuredSlice(obj *unstructured.Unstructured, field string) ([]any, bool, error) {
	return unstructured.NestedSlice(obj.Object, "spec", "template", "spec", field)
}

func setSlice(t *testing.T, obj *unstructured.Unstructured, field string, v []any) {
	t.Helper()
	if err := unstructured.SetNestedSlice(obj.Object, v, "spec", "template", "spec", field); err != nil {
		t.Fatal(err)
	}
}
