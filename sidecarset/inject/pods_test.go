package inject

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// injected is a pod into which set was injected.
func injected(t *testing.T, set *kruiseappsv1alpha1.SidecarSet) *corev1.Pod {
	t.Helper()
	pod := webPod("shop", map[string]string{"app": "web"})
	if _, err := Inject(pod, []Source{{Set: set}}, now); err != nil {
		t.Fatal(err)
	}
	return pod
}

func TestJudgingPods(t *testing.T) {
	set := sidecarSet("scs")
	pod := injected(t, set)
	newImage := set.DeepCopy()
	newImage.Spec.Containers[0].Image = "scs:v2"
	newCommand := set.DeepCopy()
	newCommand.Spec.Containers[0].Command = []string{"run"}
	cases := []struct {
		name        string
		set         *kruiseappsv1alpha1.SidecarSet
		wantUpdated bool
		wantInPlace bool
	}{
		{name: "same set", set: set, wantUpdated: true, wantInPlace: true},
		{name: "image changed: outdated, updatable in place", set: newImage, wantInPlace: true},
		{name: "command changed: outdated, not updatable in place", set: newCommand},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsUpdated(pod, tc.set); got != tc.wantUpdated {
				t.Errorf("IsUpdated = %v, want %v", got, tc.wantUpdated)
			}
			if got := UpdatableInPlace(pod, tc.set); got != tc.wantInPlace {
				t.Errorf("UpdatableInPlace = %v, want %v", got, tc.wantInPlace)
			}
		})
	}
	if h, _ := Hash(set); PodHash(pod, "scs") != h || PodHash(pod, "other") != "" {
		t.Errorf("PodHash = %q (other %q), want %q", PodHash(pod, "scs"), PodHash(pod, "other"), h)
	}
	if UpdatableInPlace(webPod("shop", nil), set) {
		t.Error("a pod never injected is not updatable in place")
	}
}

func TestSetHashPrefersTheAnnotation(t *testing.T) {
	set := sidecarSet("scs")
	computed, _ := Hash(set)
	if got, _ := SetHash(set); got != computed {
		t.Errorf("SetHash without annotation = %s, want computed %s", got, computed)
	}
	set.Annotations = map[string]string{
		kruiseappsv1alpha1.SidecarSetHashAnnotation:             "from-annotation",
		kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation: "from-annotation-no-image",
	}
	if got, _ := SetHash(set); got != "from-annotation" {
		t.Errorf("SetHash = %s", got)
	}
	if got, _ := SetHashWithoutImage(set); got != "from-annotation-no-image" {
		t.Errorf("SetHashWithoutImage = %s", got)
	}
}

func TestSidecarContainerNames(t *testing.T) {
	set := sidecarSet("mesh", func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.Containers = []kruiseappsv1alpha1.SidecarContainer{
			{Container: corev1.Container{Name: "log"}},
			{Container: corev1.Container{Name: "envoy"}, UpgradeStrategy: kruiseappsv1alpha1.SidecarContainerUpgradeStrategy{
				UpgradeType: kruiseappsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty"}},
		}
	})
	if got := SidecarContainerNames(set); !slices.Equal(got, []string{"envoy-1", "envoy-2", "log"}) {
		t.Errorf("SidecarContainerNames = %v", got)
	}
}
