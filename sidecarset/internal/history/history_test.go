package history

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func set(image string) *kruiseappsv1alpha1.SidecarSet {
	return &kruiseappsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "scs", UID: "u1", Labels: map[string]string{
			kruiseappsv1alpha1.SidecarSetCustomVersionLabel: "v1"}},
		Spec: kruiseappsv1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Containers: []kruiseappsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "scs", Image: image}}},
			Volumes:    []corev1.Volume{{Name: "log"}},
		},
	}
}

func TestData(t *testing.T) {
	data, err := Data(set("busybox:1.35.0"))
	if err != nil {
		t.Fatal(err)
	}
	// Keys sorted, as upstream's re-encoded map has them; the empty policies are in (they have no omitempty).
	want := `{"spec":{"$patch":"replace","containers":[{"image":"busybox:1.35.0","name":"scs","resources":{},` +
		`"shareVolumePolicy":{},"upgradeStrategy":{}}],` +
		`"imagePullSecrets":null,"initContainers":null,"patchPodMetadata":null,"volumes":[{"name":"log"}]}}`
	if diff := cmp.Diff(want, string(data)); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
}

func TestNew(t *testing.T) {
	r, err := New(set("busybox:1.35.0"), "flotilla-system", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Namespace != "flotilla-system" || r.Revision != 3 || r.Labels[NameLabel] != "scs" ||
		r.Labels[kruiseappsv1alpha1.SidecarSetCustomVersionLabel] != "v1" {
		t.Errorf("revision %s/%s #%d labels %v", r.Namespace, r.Name, r.Revision, r.Labels)
	}
	if ref := metav1.GetControllerOf(r); ref == nil || ref.Kind != "SidecarSet" || ref.UID != "u1" {
		t.Errorf("controller %+v", ref)
	}
	if !Selector("scs").Matches(labels.Set(r.Labels)) || Selector("other").Matches(labels.Set(r.Labels)) {
		t.Error("the selector does not pick exactly the set's revisions")
	}
}

// Restore brings back the recorded sidecars over a set that changed since, with the revision's hashes.
func TestRestore(t *testing.T) {
	old := set("busybox:1.35.0")
	old.Annotations = map[string]string{kruiseappsv1alpha1.SidecarSetHashAnnotation: "recorded"}
	r, err := New(old, "ns", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	current := set("busybox:latest")
	current.Spec.Volumes = nil
	got, err := Restore(current, r)
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Containers[0].Image != "busybox:1.35.0" || len(got.Spec.Volumes) != 1 || got.Status.LatestRevision != r.Name {
		t.Errorf("restored %+v, latest %s", got.Spec, got.Status.LatestRevision)
	}
	if got.Annotations[kruiseappsv1alpha1.SidecarSetHashAnnotation] != "recorded" {
		t.Errorf("hash %q, want the revision's", got.Annotations[kruiseappsv1alpha1.SidecarSetHashAnnotation])
	}
	want, _ := inject.HashWithoutImage(got)
	if got.Annotations[kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation] != want {
		t.Error("a hash the revision lacks is not computed")
	}
	if current.Spec.Containers[0].Image != "busybox:latest" {
		t.Error("the input changed")
	}
}
