package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

func TestDefaultSpec(t *testing.T) {
	rolling := &kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		PodUpdatePolicy: kruiseappsv1beta1.RecreatePodUpdateStrategyType, MinReadySeconds: ptr.To[int32](0)}
	retain := &kruiseappsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Retain", WhenScaled: "Retain"}
	for _, tc := range []struct {
		name string
		opts Options
		in   kruiseappsv1beta1.StatefulSetSpec
		want kruiseappsv1beta1.StatefulSetSpec
	}{
		{name: "empty, every gate", opts: allGates, want: kruiseappsv1beta1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), RevisionHistoryLimit: ptr.To[int32](10), PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy:                       kruiseappsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: rolling},
			PersistentVolumeClaimRetentionPolicy: retain,
			VolumeClaimUpdateStrategy:            kruiseappsv1beta1.VolumeClaimUpdateStrategy{Type: kruiseappsv1beta1.OnPVCDeleteVolumeClaimUpdateStrategyType},
		}},
		{name: "empty, no gate", want: kruiseappsv1beta1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), RevisionHistoryLimit: ptr.To[int32](10), PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: kruiseappsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: rolling},
		}},
		{name: "OnDelete gets no rollingUpdate", in: kruiseappsv1beta1.StatefulSetSpec{
			UpdateStrategy: kruiseappsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}},
			want: kruiseappsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](1), RevisionHistoryLimit: ptr.To[int32](10),
				PodManagementPolicy: appsv1.OrderedReadyPodManagement,
				UpdateStrategy:      kruiseappsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}},
		{name: "set values are kept", opts: allGates, in: kruiseappsv1beta1.StatefulSetSpec{
			Replicas: ptr.To[int32](0), PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy: kruiseappsv1beta1.StatefulSetUpdateStrategy{RollingUpdate: &kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{
				MaxUnavailable: ptr.To(intstr.FromString("50%")), PodUpdatePolicy: kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType}},
			PersistentVolumeClaimRetentionPolicy: &kruiseappsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: "Delete"},
		}, want: kruiseappsv1beta1.StatefulSetSpec{
			Replicas: ptr.To[int32](0), RevisionHistoryLimit: ptr.To[int32](10), PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy: kruiseappsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0), MaxUnavailable: ptr.To(intstr.FromString("50%")),
					PodUpdatePolicy: kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, MinReadySeconds: ptr.To[int32](0)}},
			PersistentVolumeClaimRetentionPolicy: &kruiseappsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Retain", WhenScaled: "Delete"},
			VolumeClaimUpdateStrategy:            kruiseappsv1beta1.VolumeClaimUpdateStrategy{Type: kruiseappsv1beta1.OnPVCDeleteVolumeClaimUpdateStrategyType},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &kruiseappsv1beta1.StatefulSet{Spec: tc.in}
			Default(s, tc.opts)
			want := tc.want
			podtemplate.Default(&want.Template)
			if diff := cmp.Diff(want, s.Spec); diff != "" {
				t.Errorf("defaulted spec (-want +got):\n%s", diff)
			}
			again := s.DeepCopy()
			Default(again, tc.opts)
			if diff := cmp.Diff(s, again); diff != "" {
				t.Errorf("defaulting twice changed (-once +twice):\n%s", diff)
			}
		})
	}
}

// Like upstream, an update defaults the templates only when the pod template changed.
func TestDefaultUpdateLeavesAnUnchangedTemplate(t *testing.T) {
	old := &kruiseappsv1beta1.StatefulSet{Spec: kruiseappsv1beta1.StatefulSetSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "x"}}}}}}
	cur := old.DeepCopy()
	DefaultUpdate(cur, old, Options{})
	if cur.Spec.Template.Spec.Containers[0].ImagePullPolicy != "" {
		t.Errorf("an unchanged template was defaulted: %+v", cur.Spec.Template.Spec.Containers[0])
	}
	cur.Spec.Template.Spec.Containers[0].Image = "y"
	DefaultUpdate(cur, old, Options{})
	if cur.Spec.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("a changed template was not defaulted: %+v", cur.Spec.Template.Spec.Containers[0])
	}
	DefaultUpdate(nil, old, Options{})
}

func TestVersionsRoundTrip(t *testing.T) {
	s := set()
	s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1)}
	alpha, err := ToV1alpha1(s)
	if err != nil {
		t.Fatal(err)
	}
	if alpha.APIVersion != kruiseappsv1alpha1.GroupVersion.String() || *alpha.Spec.Replicas != 3 || alpha.Spec.UpdateStrategy.RollingUpdate == nil {
		t.Fatalf("v1alpha1: %+v", alpha)
	}
	back, err := FromV1alpha1(alpha)
	if err != nil {
		t.Fatal(err)
	}
	if back.Spec.ReserveOrdinals != nil || back.Spec.PersistentVolumeClaimRetentionPolicy != nil {
		t.Errorf("fields v1alpha1 lacks survived: %+v", back.Spec)
	}
	if diff := cmp.Diff(s.Spec.Template, back.Spec.Template); diff != "" {
		t.Errorf("template changed (-v1beta1 +back):\n%s", diff)
	}
}
