package plan

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// ud is a UnitedDeployment of CloneSets with replicas over the subsets.
func ud(replicas *int32, subsets ...kruiseappsv1alpha1.Subset) *kruiseappsv1alpha1.UnitedDeployment {
	u := &kruiseappsv1alpha1.UnitedDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", Generation: 3}}
	u.Spec.Replicas = replicas
	u.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	u.Spec.Template.CloneSetTemplate = &kruiseappsv1alpha1.CloneSetTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"note": "x"}},
	}
	u.Spec.Template.CloneSetTemplate.Spec.Template = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}},
	}
	u.Spec.Topology.Subsets = subsets
	return u
}

func sub(name string) kruiseappsv1alpha1.Subset {
	return kruiseappsv1alpha1.Subset{Name: name, NodeSelectorTerm: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{name}},
	}}}
}

func fixed(name string, v intstr.IntOrString) kruiseappsv1alpha1.Subset {
	s := sub(name)
	s.Replicas = &v
	return s
}

func bounded(name string, mn, mx *intstr.IntOrString) kruiseappsv1alpha1.Subset {
	s := sub(name)
	s.MinReplicas, s.MaxReplicas = mn, mx
	return s
}

func n(i int32) *int32 { return ptr.To(i) }

func i(v int32) intstr.IntOrString { return intstr.FromInt32(v) }

func pct(s string) intstr.IntOrString { return intstr.FromString(s) }

func ip(v intstr.IntOrString) *intstr.IntOrString { return &v }
