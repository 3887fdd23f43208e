package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func claimTemplate(name, size string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
	}
}

func TestVCTHash(t *testing.T) {
	data, logs := claimTemplate("data", "20Gi"), claimTemplate("logs", "1Gi")
	if VCTHash(nil) != "" {
		t.Error("no templates should hash to the empty string")
	}
	h := VCTHash([]corev1.PersistentVolumeClaim{data, logs})
	if h == "" || h != VCTHash([]corev1.PersistentVolumeClaim{logs, data}) {
		t.Errorf("hash %q depends on the templates' order", h)
	}
	if VCTHash([]corev1.PersistentVolumeClaim{claimTemplate("data", "40Gi"), logs}) == h {
		t.Error("a new size gives the same hash")
	}
}

func TestVCTAllowsInPlace(t *testing.T) {
	at := func(h string) map[string]string { return map[string]string{VCTHashAnnotation: h} }
	cases := []struct {
		name     string
		from, to map[string]string
		want     bool
	}{
		{"same templates", at("1"), at("1"), true},
		{"templates changed", at("1"), at("2"), false},
		{"pod's revision from before the annotation", nil, at("2"), true},
		{"update revision without the annotation", at("1"), nil, true},
		{"templates removed", at("1"), at(""), false},
		{"templates added", at(""), at("2"), false},
		{"no templates on either", at(""), at(""), true},
	}
	for _, c := range cases {
		if got := VCTAllowsInPlace(c.from, c.to); got != c.want {
			t.Errorf("%s: VCTAllowsInPlace = %v, want %v", c.name, got, c.want)
		}
	}
}
