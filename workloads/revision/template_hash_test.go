package revision

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// The wanted values are kube-controller-manager v1.37.2's (pkg/controller.ComputeHash) for the same templates;
// the daemonset module's integration test also compares a hash with the revision kube-controller-manager
// creates for a DaemonSet.
func TestTemplateHash(t *testing.T) {
	simple := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "demo"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
	}
	cases := []struct {
		name     string
		template *corev1.PodTemplateSpec
		count    *int32
		want     string
	}{
		{"simple", simple, nil, "86f5f8d6b4"},
		{"collision count 0 differs from none", simple, ptr.To[int32](0), "fc8d4df76"},
		{"collision count 7", simple, ptr.To[int32](7), "7c47557cf9"},
		{"nil hashes as empty", nil, nil, "54f4c57dcb"},
	}
	for _, tc := range cases {
		if got := TemplateHash(tc.template, tc.count); got != tc.want {
			t.Errorf("%s: TemplateHash = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestNewHashed(t *testing.T) {
	ds := &kruiseappsv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "nginx", Namespace: "default", UID: "uid-2",
		Annotations: map[string]string{"a": "b"}}}
	labels := map[string]string{"app": "nginx"}
	got, err := NewHashed(ds, kruiseappsv1alpha1.GroupVersion.WithKind("DaemonSet"), labels, []byte(nginxData), 4, "controller-revision-hash", "6d7b9c")
	if err != nil {
		t.Fatal(err)
	}
	want := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: "nginx-6d7b9c", Namespace: "default",
			Labels:      map[string]string{"app": "nginx", "controller-revision-hash": "6d7b9c"},
			Annotations: map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet", Name: "nginx", UID: "uid-2",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Data: runtime.RawExtension{Raw: []byte(nginxData)}, Revision: 4,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewHashed (-want +got):\n%s", diff)
	}
	if got.Labels["app"] = "changed"; labels["app"] != "nginx" {
		t.Error("NewHashed shares the template labels")
	}
	if _, err := NewHashed(nil, kruiseappsv1alpha1.GroupVersion.WithKind("DaemonSet"), nil, nil, 1, "h", "x"); err == nil {
		t.Error("NewHashed without an owner: no error")
	}
}
