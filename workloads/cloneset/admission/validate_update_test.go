package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func inPlaceOnly(cs *kruiseappsv1alpha1.CloneSet) {
	cs.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
	Default(cs)
}

func both(ms ...mutation) mutation {
	return func(cs *kruiseappsv1alpha1.CloneSet) {
		for _, m := range ms {
			m(cs)
		}
	}
}

// newImage changes the container's image.
var newImage = podSpec(func(s *corev1.PodSpec) { s.Containers[0].Image = "nginx:2" })

func TestValidateUpdateRejects(t *testing.T) {
	cases := []struct {
		name     string
		old      mutation
		mutate   mutation
		pods     map[string]*corev1.Pod
		wantType field.ErrorType
		wantPath string
	}{
		{"selector changed", nil, func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.Selector.MatchLabels["tier"] = "x"
			cs.Spec.Template.Labels["tier"] = "x"
		}, nil, field.ErrorTypeForbidden, "spec.selector"},
		{"InPlaceOnly env changed", inPlaceOnly, both(newImage, podSpec(func(s *corev1.PodSpec) { s.Containers[0].Env[0].Value = "2" })), nil,
			field.ErrorTypeForbidden, "spec.template.spec.containers[0].env[0].value"},
		{"InPlaceOnly pull policy changed", inPlaceOnly, both(newImage, podSpec(func(s *corev1.PodSpec) { s.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent })), nil,
			field.ErrorTypeForbidden, "spec.template.spec.containers[0].imagePullPolicy"},
		{"InPlaceOnly container added", inPlaceOnly, podSpec(func(s *corev1.PodSpec) {
			s.Containers = append(s.Containers, corev1.Container{Name: "side", Image: "busybox"})
		}), nil, field.ErrorTypeForbidden, "spec.template.spec.containers"},
		{"InPlaceOnly pod field added", inPlaceOnly, podSpec(func(s *corev1.PodSpec) { s.HostNetwork = true }), nil,
			field.ErrorTypeForbidden, "spec.template.spec.hostNetwork"},
		{"switching to InPlaceOnly with a spec change", nil, both(inPlaceOnly, podSpec(func(s *corev1.PodSpec) { s.NodeName = "n1" })), nil,
			field.ErrorTypeForbidden, "spec.template.spec.nodeName"},
		{"new podsToDelete entry of a missing pod", podsToDelete("web-a"), podsToDelete("web-a", "web-b"), podMap(pod("web-a")),
			field.ErrorTypeInvalid, "spec.scaleStrategy.podsToDelete[1]"},
		{"a new error despite an old one (ratchet)", maxSurge(intstr.FromInt32(-1)),
			partition(intstr.FromInt32(-1)), nil,
			field.ErrorTypeInvalid, "spec.updateStrategy.partition"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, cs := updatePair(tc.old, tc.mutate)
			expectOneError(t, Validate(cs, old, tc.pods), tc.wantType, tc.wantPath)
		})
	}
}

// updatePair builds the stored CloneSet (changed by old) and the updated one (also changed by mutate).
func updatePair(old, mutate mutation) (*kruiseappsv1alpha1.CloneSet, *kruiseappsv1alpha1.CloneSet) {
	stored := cloneSet()
	if old != nil {
		old(stored)
	}
	cs := stored.DeepCopy()
	if mutate != nil {
		mutate(cs)
	}
	return stored, cs
}

func TestValidateUpdateAccepts(t *testing.T) {
	cases := []struct {
		name   string
		old    mutation
		mutate mutation
		pods   map[string]*corev1.Pod
	}{
		{"no change", nil, nil, nil},
		{"every mutable field", nil, func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.Replicas, cs.Spec.RevisionHistoryLimit = ptr.To[int32](9), ptr.To[int32](3)
			cs.Spec.MinReadySeconds, cs.Spec.ProgressDeadlineSeconds = 5, ptr.To[int32](60)
			cs.Spec.UpdateStrategy.Paused = true
			cs.Spec.Template.Spec.Containers[0].Env = nil
			claims("data")(cs)
		}, nil},
		{"InPlaceOnly image and metadata", inPlaceOnly, both(newImage, func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.Template.Annotations = map[string]string{"a": "b"}
			cs.Spec.Template.Labels["version"] = "2"
		}), nil},
		{"switching to InPlaceOnly with an image change", nil, both(inPlaceOnly, newImage), nil},
		{"InPlaceIfPossible env change", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		}, podSpec(func(s *corev1.PodSpec) { s.Containers[0].Env = nil }), nil},
		{"podsToDelete entry whose pod is gone", podsToDelete("web-gone"), podsToDelete("web-gone", "web-a"), podMap(pod("web-a"))},
		{"podsToDelete entries dropped", podsToDelete("web-gone", "web-a"), podsToDelete("web-a"), nil},
		{"old error kept", maxSurge(intstr.FromInt32(-1)),
			func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](5) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, cs := updatePair(tc.old, tc.mutate)
			if errs := Validate(cs, old, tc.pods); len(errs) > 0 {
				t.Fatalf("rejected: %v", errs)
			}
		})
	}
}

func TestNewPodsToDelete(t *testing.T) {
	old, cs := updatePair(podsToDelete("a", "b"), podsToDelete("b", "c", "d"))
	got := NewPodsToDelete(cs, old)
	if len(got) != 2 || got[0] != "c" || got[1] != "d" {
		t.Errorf("NewPodsToDelete = %v, want [c d]", got)
	}
	if got := NewPodsToDelete(cs, nil); len(got) != 3 {
		t.Errorf("on create NewPodsToDelete = %v, want all three", got)
	}
}
