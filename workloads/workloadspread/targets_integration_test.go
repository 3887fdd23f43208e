package workloadspread

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/internal/plan"
)

// Every supported target kind is spread: the webhook finds the WorkloadSpread from the pod's controller (a
// Deployment's through its ReplicaSet) and the controller counts the target's pods.
func TestEveryTargetKind(t *testing.T) {
	e := start(t)
	labels := map[string]string{"app": "t"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:v1"}}}}
	selector := &metav1.LabelSelector{MatchLabels: labels}
	jobTemplate := *template.DeepCopy()
	jobTemplate.Spec.RestartPolicy = corev1.RestartPolicyNever
	cases := []struct {
		target client.Object
		gvk    schema.GroupVersionKind
	}{
		{gvk: appsv1.SchemeGroupVersion.WithKind("Deployment"), target: &appsv1.Deployment{
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: selector, Template: template}}},
		{gvk: appsv1.SchemeGroupVersion.WithKind("StatefulSet"), target: &appsv1.StatefulSet{
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: selector, Template: template}}},
		{gvk: batchv1.SchemeGroupVersion.WithKind("Job"), target: &batchv1.Job{
			Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](2), Template: jobTemplate}}},
		{gvk: kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet"), target: &kruiseappsv1alpha1.CloneSet{
			Spec: kruiseappsv1alpha1.CloneSetSpec{Replicas: ptr.To[int32](2), Selector: selector, Template: template}}},
		{gvk: kruiseappsv1beta1.GroupVersion.WithKind("StatefulSet"), target: &kruiseappsv1beta1.StatefulSet{
			Spec: kruiseappsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: selector, Template: template}}},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%s.%s", tc.gvk.Kind, tc.gvk.Group), func(t *testing.T) {
			name := fmt.Sprintf("target-%d", i)
			tc.target.SetName(name)
			tc.target.SetNamespace(e.ns)
			managertest.Create(t, e.c, tc.target)
			owner := *metav1.NewControllerRef(tc.target, tc.gvk)
			if tc.gvk.Kind == "Deployment" {
				owner = e.deploymentReplicaSet(t, tc.target, template)
			}
			ws := &kruiseappsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
				Spec: kruiseappsv1alpha1.WorkloadSpreadSpec{
					TargetReference: &kruiseappsv1alpha1.TargetReference{APIVersion: tc.gvk.GroupVersion().String(), Kind: tc.gvk.Kind, Name: name},
					Subsets: []kruiseappsv1alpha1.WorkloadSpreadSubset{
						{Name: "zone-a", MaxReplicas: maxOf(intstr.FromString("50%"))}, {Name: "zone-b"}}}}
			managertest.Create(t, e.c, ws)
			e.waitReconciled(t, ws)
			e.waitRouted(t)
			for j, want := range []string{"zone-a", "zone-b"} {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, j), Namespace: e.ns, Labels: labels,
					OwnerReferences: []metav1.OwnerReference{owner}}, Spec: *template.Spec.DeepCopy()}
				managertest.Create(t, e.c, pod)
				if m, _ := plan.MatchedOf(pod); m.Subset != want {
					t.Errorf("pod %s placed in %q, want %q", pod.Name, m.Subset, want)
				}
				e.markReady(t, pod)
			}
			e.waitSubsets(t, ws, map[string][2]int32{"zone-a": {1, 0}, "zone-b": {1, -1}})
			e.checkCosts(t, name, plan.ReadsCosts(tc.gvk.GroupKind()))
		})
	}
}

// deploymentReplicaSet creates a ReplicaSet the Deployment controls, as its controller would, and returns the
// reference its pods carry.
func (e *env) deploymentReplicaSet(t *testing.T, d client.Object, template corev1.PodTemplateSpec) metav1.OwnerReference {
	t.Helper()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: d.GetName() + "-abc", Namespace: e.ns, Labels: template.Labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: template.Labels}, Template: template}}
	managertest.Create(t, e.c, rs)
	return *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
}

// checkCosts checks the deletion costs of the two pods of a target: set where its controller reads them, and
// never written otherwise (the reconcile that wrote the subsets' status would have written them first).
func (e *env) checkCosts(t *testing.T, name string, read bool) {
	t.Helper()
	want := map[string]string{name + "-0": "200", name + "-1": "100"}
	if !read {
		want = map[string]string{name + "-0": "", name + "-1": ""}
	}
	e.waitCosts(t, want)
}
