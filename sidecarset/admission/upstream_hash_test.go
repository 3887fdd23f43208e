package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Defaulted SidecarSets hash as under upstream: the hashes below are those upstream's own webhook tests
// expect for the same SidecarSets. A default applied differently (or not at all) changes them, and every
// pod upstream injected would look outdated.
func TestDefaultHashesMatchUpstream(t *testing.T) {
	sidecar := func(name, image string) []kruiseappsv1alpha1.SidecarContainer {
		return []kruiseappsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: name, Image: image}}}
	}
	mounted := sidecar("dns-f", "dns:1.0")
	mounted[0].VolumeMounts = []corev1.VolumeMount{{Name: "podinfo", MountPath: "/etc/podinfo"}}
	for _, tt := range []struct {
		name              string
		spec              kruiseappsv1alpha1.SidecarSetSpec
		hash, hashNoImage string
	}{
		{"a mount", kruiseappsv1alpha1.SidecarSetSpec{Containers: mounted, Volumes: []corev1.Volume{{Name: "podinfo",
			VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}}}},
			"7b64cw4d5xv2wvx6229fbxzf4x55wvzwxc47fvd6bbx97d44xcz6xf8844594xbz", ""},
		{"patches and a revision", kruiseappsv1alpha1.SidecarSetSpec{Containers: sidecar("dns-f", "dns:1.0"),
			PatchPodMetadata:  []kruiseappsv1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"key1": "value1"}}},
			InjectionStrategy: kruiseappsv1alpha1.SidecarSetInjectionStrategy{Revision: &kruiseappsv1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("1")}}},
			"6wbd76bd7984x24fb4f44fv9222cw9v9bcf85x766744wddd4zwx927zzz2zb684", "82684vwf9d4cb4wz4vffx4ddfbb47ww4z4wwxdbwb8w2zbb7zvf4524cdd49bv94"},
		{"an untagged image", kruiseappsv1alpha1.SidecarSetSpec{Containers: sidecar("app", "nginx")},
			"4fcz55z67f6w69czcvd5vdbxv2bw9fxd7w75x4c8x6688x7678xw262wbvdfxcff", "c2c27xwzzv626x4d8ddb5544d99d8c4dd49x5c67zd5cbdfx2f5b2726x58b7xzw"},
	} {
		s := &kruiseappsv1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-test"}, Spec: tt.spec}
		Default(s, nil)
		if got := s.Annotations[kruiseappsv1alpha1.SidecarSetHashAnnotation]; got != tt.hash {
			t.Errorf("%s: hash %s, upstream's %s", tt.name, got, tt.hash)
		}
		if got := s.Annotations[kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation]; tt.hashNoImage != "" && got != tt.hashNoImage {
			t.Errorf("%s: hash without image %s, upstream's %s", tt.name, got, tt.hashNoImage)
		}
	}
}
