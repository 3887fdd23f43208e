package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// sidecarSet is a small valid SidecarSet, defaulted as the mutating webhook leaves it.
func sidecarSet() *kruiseappsv1alpha1.SidecarSet {
	s := &kruiseappsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "scs"},
		Spec: kruiseappsv1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Containers: []kruiseappsv1alpha1.SidecarContainer{{Container: corev1.Container{
				Name: "scs", Image: "busybox:1.35.0", VolumeMounts: []corev1.VolumeMount{{Name: "log", MountPath: "/var/log"}},
			}}},
			Volumes: []corev1.Volume{{Name: "log"}},
		},
	}
	Default(s, nil)
	return s
}

func TestDefault(t *testing.T) {
	s := &kruiseappsv1alpha1.SidecarSet{Spec: kruiseappsv1alpha1.SidecarSetSpec{
		InitContainers: []kruiseappsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "init", Image: "busybox"}}},
		Containers: []kruiseappsv1alpha1.SidecarContainer{{
			Container: corev1.Container{
				Name: "c", Image: "busybox:1.35.0",
				Ports:          []corev1.ContainerPort{{ContainerPort: 80}},
				Env:            []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
				StartupProbe:   &corev1.Probe{},
			},
			TransferEnv: []kruiseappsv1alpha1.TransferEnvVar{{
				SourceContainerNameFrom: &kruiseappsv1alpha1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}},
				EnvName:                 "X",
			}},
		}},
		Volumes:           []corev1.Volume{{Name: "v"}},
		PatchPodMetadata:  []kruiseappsv1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"a": "b"}}},
		InjectionStrategy: kruiseappsv1alpha1.SidecarSetInjectionStrategy{Revision: &kruiseappsv1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To("r")}},
	}}
	Default(s, nil)
	u := s.Spec.UpdateStrategy
	if u.Type != kruiseappsv1alpha1.RollingUpdateSidecarSetStrategyType || *u.MaxUnavailable != intstr.FromInt32(1) || *u.Partition != intstr.FromInt32(0) {
		t.Errorf("updateStrategy %+v", u)
	}
	if *s.Spec.RevisionHistoryLimit != 10 || s.Spec.PatchPodMetadata[0].PatchPolicy != kruiseappsv1alpha1.SidecarSetRetainPatchPolicy ||
		s.Spec.InjectionStrategy.Revision.Policy != kruiseappsv1alpha1.AlwaysSidecarSetInjectRevisionPolicy || s.Spec.Volumes[0].EmptyDir == nil {
		t.Errorf("spec %+v", s.Spec)
	}
	init, c := s.Spec.InitContainers[0], s.Spec.Containers[0]
	want := []any{
		init.PodInjectPolicy, kruiseappsv1alpha1.AfterAppContainerType,
		c.PodInjectPolicy, kruiseappsv1alpha1.BeforeAppContainerType,
		init.UpgradeStrategy.UpgradeType, kruiseappsv1alpha1.SidecarContainerColdUpgrade,
		c.UpgradeStrategy.UpgradeType, kruiseappsv1alpha1.SidecarContainerColdUpgrade,
		c.ShareVolumePolicy.Type, kruiseappsv1alpha1.ShareVolumePolicyDisabled,
		init.ImagePullPolicy, corev1.PullAlways, // no tag
		c.ImagePullPolicy, corev1.PullIfNotPresent, // a tag other than latest
		c.TerminationMessagePath, corev1.TerminationMessagePathDefault,
		c.TerminationMessagePolicy, corev1.TerminationMessageReadFile,
		c.Ports[0].Protocol, corev1.ProtocolTCP,
		c.Env[0].ValueFrom.FieldRef.APIVersion, "v1",
		c.TransferEnv[0].SourceContainerNameFrom.FieldRef.APIVersion, "v1",
		c.ReadinessProbe.PeriodSeconds, int32(10),
		c.ReadinessProbe.HTTPGet.Path, "/",
		c.ReadinessProbe.HTTPGet.Scheme, corev1.URISchemeHTTP,
		// Upstream leaves a sidecar's startup probe alone, and the hash covers it.
		c.StartupProbe.PeriodSeconds, int32(0),
	}
	for i := 0; i < len(want); i += 2 {
		if want[i] != want[i+1] {
			t.Errorf("default %d: got %v, want %v", i/2, want[i], want[i+1])
		}
	}
	again := s.DeepCopy()
	Default(again, s)
	if diff := cmp.Diff(s, again); diff != "" {
		t.Errorf("defaulting twice changed (-once +twice):\n%s", diff)
	}
	Default(nil, nil)
}

func TestDefaultKeepsValuesSet(t *testing.T) {
	s := &kruiseappsv1alpha1.SidecarSet{Spec: kruiseappsv1alpha1.SidecarSetSpec{
		UpdateStrategy: kruiseappsv1alpha1.SidecarSetUpdateStrategy{Type: kruiseappsv1alpha1.NotUpdateSidecarSetStrategyType,
			MaxUnavailable: ptr.To(intstr.FromString("20%")), Partition: ptr.To(intstr.FromInt32(3))},
		Containers: []kruiseappsv1alpha1.SidecarContainer{{
			Container:         corev1.Container{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullNever},
			PodInjectPolicy:   kruiseappsv1alpha1.AfterAppContainerType,
			UpgradeStrategy:   kruiseappsv1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: kruiseappsv1alpha1.SidecarContainerHotUpgrade},
			ShareVolumePolicy: kruiseappsv1alpha1.ShareVolumePolicy{Type: kruiseappsv1alpha1.ShareVolumePolicyEnabled},
		}},
		RevisionHistoryLimit: ptr.To[int32](0),
		PatchPodMetadata:     []kruiseappsv1alpha1.SidecarSetPatchPodMetadata{{PatchPolicy: kruiseappsv1alpha1.SidecarSetOverwritePatchPolicy}},
	}}
	want := s.DeepCopy()
	Default(s, nil)
	s.Annotations = nil // the hashes
	c := &s.Spec.Containers[0].Container
	c.TerminationMessagePath, c.TerminationMessagePolicy = "", ""
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("values set were changed (-set +defaulted):\n%s", diff)
	}
}

// The hash annotations are those of the defaulted SidecarSet; only images count towards the first alone.
func TestDefaultSetsHashes(t *testing.T) {
	s := sidecarSet()
	hash, _ := inject.Hash(s)
	withoutImage, _ := inject.HashWithoutImage(s)
	if s.Annotations[kruiseappsv1alpha1.SidecarSetHashAnnotation] != hash || s.Annotations[kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation] != withoutImage {
		t.Fatalf("annotations %v, want hash %s and %s", s.Annotations, hash, withoutImage)
	}
	newImage := s.DeepCopy()
	newImage.Spec.Containers[0].Image = "busybox:1.36.0"
	Default(newImage, s)
	if newImage.Annotations[kruiseappsv1alpha1.SidecarSetHashAnnotation] == hash ||
		newImage.Annotations[kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation] != withoutImage {
		t.Errorf("a new image: annotations %v, before %s %s", newImage.Annotations, hash, withoutImage)
	}
	newCommand := s.DeepCopy()
	newCommand.Spec.Containers[0].Command = []string{"sleep"}
	Default(newCommand, s)
	if newCommand.Annotations[kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation] == withoutImage {
		t.Error("a new command kept the hash without image")
	}
}
