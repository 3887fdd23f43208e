package integration

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/revision"
)

var webSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}

// webTemplate is a pod template with an init container and two containers.
func webTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1"}},
			Containers: []corev1.Container{
				{Name: "web", Image: image, Env: []corev1.EnvVar{{Name: "A", Value: "1"}}},
				{Name: "sidecar", Image: "envoy:1"},
			},
		},
	}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// get reads obj again by its namespace and name.
func get[T client.Object](t *testing.T, obj T) T {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func createCloneSet(t *testing.T, ns, name, image string) *kruiseappsv1alpha1.CloneSet {
	t.Helper()
	cs := &kruiseappsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       kruiseappsv1alpha1.CloneSetSpec{Replicas: ptr.To[int32](5), Selector: webSelector, Template: webTemplate(image)},
	}
	create(t, cs)
	return cs
}

func createAdvancedStatefulSet(t *testing.T, ns, name string) *kruiseappsv1beta1.StatefulSet {
	t.Helper()
	sts := &kruiseappsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kruiseappsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](3), Selector: webSelector, Template: webTemplate("nginx:1"),
			UpdateStrategy: kruiseappsv1beta1.StatefulSetUpdateStrategy{RollingUpdate: &kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}}},
	}
	create(t, sts)
	return sts
}

func createAdvancedDaemonSet(t *testing.T, ns, name string) *kruiseappsv1alpha1.DaemonSet {
	t.Helper()
	ds := &kruiseappsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       kruiseappsv1alpha1.DaemonSetSpec{Selector: webSelector, Template: webTemplate("nginx:1")},
	}
	create(t, ds)
	return ds
}

func createDeployment(t *testing.T, ns, name string, paused bool) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: webSelector, Template: webTemplate("nginx:1"), Paused: paused},
	}
	create(t, d)
	return d
}

func createStatefulSet(t *testing.T, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: webSelector, Template: webTemplate("nginx:1")},
	}
	create(t, s)
	return s
}

// ownerRef is the controller reference a workload puts on what it creates.
func ownerRef(owner client.Object, apiVersion, kind string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}
}

// createRevision records a template of the CloneSet the way its controller does (revision.New: named
// <cs>-<hash>, labelled with the template labels and the hash, data {"spec":{"template":{...,"$patch":"replace"}}},
// controlled by the CloneSet).
func createRevision(t *testing.T, cs *kruiseappsv1alpha1.CloneSet, number int64, tmpl corev1.PodTemplateSpec, cause string) {
	t.Helper()
	data, err := revision.TemplatePatch(&tmpl)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := revision.New(cs, kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet"), tmpl.Labels, data, number, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cause != "" {
		cr.Annotations = map[string]string{"kubernetes.io/change-cause": cause}
	}
	create(t, cr)
}

// createReplicaSet records a Deployment revision the way its controller does.
func createReplicaSet(t *testing.T, d *appsv1.Deployment, name, number string, tmpl corev1.PodTemplateSpec, annotations map[string]string) {
	t.Helper()
	tmpl.Labels = map[string]string{"app": "web", "pod-template-hash": name}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["deployment.kubernetes.io/revision"] = number
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + name, Namespace: d.Namespace, Annotations: annotations, Labels: tmpl.Labels,
			OwnerReferences: ownerRef(d, "apps/v1", "Deployment")},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl},
	}
	create(t, rs)
}

// createPod creates a pod of owner (nothing schedules it: the tests only need it to exist).
func createPod(t *testing.T, ns, name string, owner []metav1.OwnerReference, labels map[string]string) {
	t.Helper()
	// Without a controller manager nobody creates the namespace's default ServiceAccount pods need.
	sa := &corev1.ServiceAccount{ObjectMeta: objectMeta(ns, "default")}
	if err := k8s.Create(context.Background(), sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: owner, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1"}}},
	}
	create(t, pod)
}

func images(spec corev1.PodSpec) map[string]string {
	out := map[string]string{}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		out[c.Name] = c.Image
	}
	return out
}

func envOf(spec corev1.PodSpec, container string) []corev1.EnvVar {
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if c.Name == container {
			return c.Env
		}
	}
	return nil
}

func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}

func intOrPercent(s string) intstr.IntOrString { return intstr.Parse(s) }
