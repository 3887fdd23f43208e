package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

func TestDefaultSpec(t *testing.T) {
	zero, twenty := intstr.FromInt32(0), intstr.FromString("20%")
	cases := []struct {
		name string
		in   kruiseappsv1alpha1.CloneSetSpec
		want kruiseappsv1alpha1.CloneSetSpec
	}{
		{"empty", kruiseappsv1alpha1.CloneSetSpec{}, kruiseappsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](1), RevisionHistoryLimit: ptr.To[int32](10),
			UpdateStrategy: kruiseappsv1alpha1.CloneSetUpdateStrategy{
				Type: "ReCreate", Partition: &zero, MaxUnavailable: &twenty, MaxSurge: &zero,
			},
		}},
		{"in place if possible", spec("InPlaceIfPossible"), withInPlace(spec("InPlaceIfPossible"))},
		{"in place only", spec("InPlaceOnly"), withInPlace(spec("InPlaceOnly"))},
		{"on delete", spec("OnDelete"), defaulted(spec("OnDelete"))},
		{"set values kept", kruiseappsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](0), RevisionHistoryLimit: ptr.To[int32](2),
			UpdateStrategy: kruiseappsv1alpha1.CloneSetUpdateStrategy{
				Type: "ReCreate", Partition: ptr.To(intstr.FromString("50%")), MaxUnavailable: &zero,
				MaxSurge: ptr.To(intstr.FromInt32(2)), InPlaceUpdateStrategy: &kruiseappspub.InPlaceUpdateStrategy{GracePeriodSeconds: 3},
			},
		}, kruiseappsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](0), RevisionHistoryLimit: ptr.To[int32](2),
			UpdateStrategy: kruiseappsv1alpha1.CloneSetUpdateStrategy{
				Type: "ReCreate", Partition: ptr.To(intstr.FromString("50%")), MaxUnavailable: &zero,
				MaxSurge: ptr.To(intstr.FromInt32(2)), InPlaceUpdateStrategy: &kruiseappspub.InPlaceUpdateStrategy{GracePeriodSeconds: 3},
			},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := &kruiseappsv1alpha1.CloneSet{Spec: tc.in}
			Default(cs)
			want := tc.want
			podtemplate.Default(&want.Template)
			if diff := cmp.Diff(want, cs.Spec); diff != "" {
				t.Errorf("defaulted spec (-want +got):\n%s", diff)
			}
		})
	}
}

func spec(t kruiseappsv1alpha1.CloneSetUpdateStrategyType) kruiseappsv1alpha1.CloneSetSpec {
	return kruiseappsv1alpha1.CloneSetSpec{UpdateStrategy: kruiseappsv1alpha1.CloneSetUpdateStrategy{Type: t}}
}

func defaulted(s kruiseappsv1alpha1.CloneSetSpec) kruiseappsv1alpha1.CloneSetSpec {
	zero, twenty := intstr.FromInt32(0), intstr.FromString("20%")
	s.Replicas, s.RevisionHistoryLimit = ptr.To[int32](1), ptr.To[int32](10)
	s.UpdateStrategy.Partition, s.UpdateStrategy.MaxUnavailable, s.UpdateStrategy.MaxSurge = &zero, &twenty, &zero
	return s
}

func withInPlace(s kruiseappsv1alpha1.CloneSetSpec) kruiseappsv1alpha1.CloneSetSpec {
	s = defaulted(s)
	s.UpdateStrategy.InPlaceUpdateStrategy = &kruiseappspub.InPlaceUpdateStrategy{}
	return s
}

// The defaults end up in revision hashes: the serialized form must be upstream's (integers stay integers,
// the scale strategy gets nothing).
func TestDefaultSerialization(t *testing.T) {
	cs := &kruiseappsv1alpha1.CloneSet{}
	Default(cs)
	got, err := jsonOf(cs.Spec.UpdateStrategy)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"ReCreate","partition":0,"maxUnavailable":"20%","maxSurge":0}`; got != want {
		t.Errorf("updateStrategy %s, want %s", got, want)
	}
	if got, _ := jsonOf(cs.Spec.ScaleStrategy); got != `{}` {
		t.Errorf("scaleStrategy %s, want {}", got)
	}
}

func TestDefaultTemplates(t *testing.T) {
	cs := &kruiseappsv1alpha1.CloneSet{Spec: kruiseappsv1alpha1.CloneSetSpec{
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{Spec: corev1.PersistentVolumeClaimSpec{
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{"storage": resource.MustParse("0.0001")}},
		}}},
	}}
	want := cs.Spec.Template.DeepCopy()
	podtemplate.Default(want)
	Default(cs)
	if diff := cmp.Diff(*want, cs.Spec.Template); diff != "" {
		t.Errorf("template (-want +got):\n%s", diff)
	}
	claim := cs.Spec.VolumeClaimTemplates[0]
	if claim.Status.Phase != corev1.ClaimPending {
		t.Errorf("claim phase %q, want Pending", claim.Status.Phase)
	}
	if q := claim.Spec.Resources.Requests["storage"]; q.String() != "1m" {
		t.Errorf("storage request %s, want 1m", q.String())
	}
	if claim.Spec.VolumeMode != nil {
		t.Error("volumeMode defaulted; upstream leaves it to the apiserver")
	}
}

func TestDefaultUpdateDefaultsTemplatesOnlyWhenChanged(t *testing.T) {
	bare := func(image string) *kruiseappsv1alpha1.CloneSet {
		return &kruiseappsv1alpha1.CloneSet{Spec: kruiseappsv1alpha1.CloneSetSpec{
			Template:             corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{}},
		}}
	}
	unchanged := bare("a")
	DefaultUpdate(unchanged, bare("a"))
	if unchanged.Spec.Template.Spec.RestartPolicy != "" || unchanged.Spec.VolumeClaimTemplates[0].Status.Phase != "" {
		t.Error("templates defaulted although the template did not change")
	}
	if unchanged.Spec.Replicas == nil || unchanged.Spec.UpdateStrategy.Type == "" {
		t.Error("spec not defaulted")
	}
	changed := bare("b")
	DefaultUpdate(changed, bare("a"))
	if changed.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || changed.Spec.VolumeClaimTemplates[0].Status.Phase != corev1.ClaimPending {
		t.Error("templates not defaulted although the template changed")
	}
}

func TestDefaultIsIdempotentAndNilSafe(t *testing.T) {
	Default(nil)
	DefaultUpdate(nil, nil)
	cs := cloneSet()
	again := cs.DeepCopy()
	Default(again)
	if !equality.Semantic.DeepEqual(cs, again) {
		t.Error("a second Default changed the CloneSet")
	}
}
