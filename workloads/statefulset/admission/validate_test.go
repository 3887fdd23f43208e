package admission

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

func rolling(s *kruiseappsv1beta1.StatefulSet) *kruiseappsv1beta1.RollingUpdateStatefulSetStrategy {
	return s.Spec.UpdateStrategy.RollingUpdate
}

func TestValidateCreate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*kruiseappsv1beta1.StatefulSet)
		typ    field.ErrorType
		path   string
	}{
		{name: "negative replicas", change: func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](-1) },
			typ: field.ErrorTypeInvalid, path: "spec.replicas"},
		{name: "an unknown pod management policy", change: func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.PodManagementPolicy = "Sometimes" },
			typ: field.ErrorTypeNotSupported, path: "spec.podManagementPolicy"},
		{name: "a negative reserved ordinal", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(-2)}
		},
			typ: field.ErrorTypeInvalid, path: "spec.reserveOrdinals[0]"},
		{name: "a reversed range", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("5-3")}
		}, typ: field.ErrorTypeInvalid, path: "spec.reserveOrdinals[1]"},
		{name: "a range of words", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromString("a-b")}
		},
			typ: field.ErrorTypeInvalid, path: "spec.reserveOrdinals[0]"},
		{name: "scaleStrategy.maxUnavailable with OrderedReady", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
			s.Spec.ScaleStrategy = &kruiseappsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromString("10%"))}
		}, typ: field.ErrorTypeInvalid, path: "spec.scaleStrategy.maxUnavailable"},
		{name: "scaleStrategy.maxUnavailable 0%", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.ScaleStrategy = &kruiseappsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromString("0%"))}
		}, typ: field.ErrorTypeInvalid, path: "spec.scaleStrategy.maxUnavailable"},
		{name: "rolling maxUnavailable 3 with OrderedReady", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
			rolling(s).MaxUnavailable = ptr.To(intstr.FromInt32(3))
		}, typ: field.ErrorTypeInvalid, path: "spec.updateStrategy.rollingUpdate.maxUnavailable"},
		{name: "rolling maxUnavailable 0", change: func(s *kruiseappsv1beta1.StatefulSet) { rolling(s).MaxUnavailable = ptr.To(intstr.FromInt32(0)) },
			typ: field.ErrorTypeInvalid, path: "spec.updateStrategy.rollingUpdate.maxUnavailable"},
		{name: "rolling maxUnavailable \"5\"", change: func(s *kruiseappsv1beta1.StatefulSet) { rolling(s).MaxUnavailable = ptr.To(intstr.FromString("5")) },
			typ: field.ErrorTypeInvalid, path: "spec.updateStrategy.rollingUpdate.maxUnavailable"},
		{name: "negative partition", change: func(s *kruiseappsv1beta1.StatefulSet) { rolling(s).Partition = ptr.To[int32](-1) },
			typ: field.ErrorTypeInvalid, path: "spec.updateStrategy.rollingUpdate.partition"},
		{name: "minReadySeconds 301", change: func(s *kruiseappsv1beta1.StatefulSet) { rolling(s).MinReadySeconds = ptr.To[int32](301) },
			typ: field.ErrorTypeInvalid, path: "spec.updateStrategy.rollingUpdate.minReadySeconds"},
		{name: "InPlaceIfPossible without the readiness gate", change: func(s *kruiseappsv1beta1.StatefulSet) {
			rolling(s).PodUpdatePolicy = kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
		}, typ: field.ErrorTypeInvalid, path: "spec.template.spec.readinessGates"},
		{name: "InPlaceOnly without the readiness gate", change: func(s *kruiseappsv1beta1.StatefulSet) {
			rolling(s).PodUpdatePolicy = kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType
		}, typ: field.ErrorTypeInvalid, path: "spec.template.spec.readinessGates"},
		{name: "an unknown pod update policy", change: func(s *kruiseappsv1beta1.StatefulSet) { rolling(s).PodUpdatePolicy = "Teleport" },
			typ: field.ErrorTypeNotSupported, path: "spec.updateStrategy.rollingUpdate.podUpdatePolicy"},
		{name: "unorderedUpdate with OrderedReady", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
			rolling(s).UnorderedUpdate = &kruiseappsv1beta1.UnorderedUpdateStrategy{}
		}, typ: field.ErrorTypeInvalid, path: "spec.updateStrategy.rollingUpdate.unorderedUpdate"},
		{name: "both priority kinds", change: func(s *kruiseappsv1beta1.StatefulSet) {
			rolling(s).UnorderedUpdate = &kruiseappsv1beta1.UnorderedUpdateStrategy{PriorityStrategy: &kruiseappspub.UpdatePriorityStrategy{
				WeightPriority: []kruiseappspub.UpdatePriorityWeightTerm{{Weight: 1}}, OrderPriority: []kruiseappspub.UpdatePriorityOrderTerm{{OrderedKey: "k"}}}}
		}, typ: field.ErrorTypeInvalid, path: "spec.updateStrategy.rollingUpdate.unorderedUpdate.priorityStrategy"},
		{name: "OnDelete with rollingUpdate", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
		},
			typ: field.ErrorTypeInvalid, path: "spec.updateStrategy.rollingUpdate"},
		{name: "an unknown update type", change: func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.UpdateStrategy.Type = "Partition" },
			typ: field.ErrorTypeNotSupported, path: "spec.updateStrategy.type"},
		{name: "an unknown retention", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Archive"
		},
			typ: field.ErrorTypeNotSupported, path: "spec.persistentVolumeClaimRetentionPolicy.whenScaled"},
		{name: "an unknown claim update strategy", change: func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.VolumeClaimUpdateStrategy.Type = "Eventually" },
			typ: field.ErrorTypeNotSupported, path: "spec.volumeClaimUpdateStrategy.type"},
		{name: "a negative start ordinal", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.Ordinals = &kruiseappsv1beta1.StatefulSetOrdinals{Start: -1}
		},
			typ: field.ErrorTypeInvalid, path: "spec.ordinals.start"},
		{name: "no selector", change: func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Selector = nil },
			typ: field.ErrorTypeRequired, path: "spec.selector"},
		{name: "an empty selector", change: func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Selector = &metav1.LabelSelector{} },
			typ: field.ErrorTypeInvalid, path: "spec.selector"},
		{name: "a selector missing the template", change: func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Selector.MatchLabels["app"] = "other" },
			typ: field.ErrorTypeInvalid, path: "spec.template.metadata.labels"},
		{name: "restartPolicy OnFailure", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		},
			typ: field.ErrorTypeNotSupported, path: "spec.template.spec.restartPolicy"},
		{name: "activeDeadlineSeconds", change: func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](1) },
			typ: field.ErrorTypeForbidden, path: "spec.template.spec.activeDeadlineSeconds"},
		{name: "a claim template named like a volume", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, typ: field.ErrorTypeDuplicate, path: "spec.volumeClaimTemplates[0].metadata.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := set()
			tc.change(s)
			expectOneError(t, Validate(s, nil), tc.typ, tc.path)
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*kruiseappsv1beta1.StatefulSet)
	}{
		{name: "the defaults"},
		{name: "maxUnavailable 1 with OrderedReady", change: func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement }},
		{name: "maxUnavailable and scale maxUnavailable percentages with Parallel", change: func(s *kruiseappsv1beta1.StatefulSet) {
			rolling(s).MaxUnavailable = ptr.To(intstr.FromString("50%"))
			s.Spec.ScaleStrategy = &kruiseappsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromString("10%"))}
		}},
		{name: "in place with the readiness gate", change: func(s *kruiseappsv1beta1.StatefulSet) {
			rolling(s).PodUpdatePolicy = kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType
			s.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: kruiseappspub.InPlaceUpdateReady}}
		}},
		{name: "reserved numbers and ranges", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(0), intstr.FromString("3-5"), intstr.FromString("7-7")}
		}},
		{name: "OnDelete", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy = kruiseappsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
		}},
		{name: "no fields defaulted", change: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec = kruiseappsv1beta1.StatefulSetSpec{Selector: s.Spec.Selector, Template: s.Spec.Template, VolumeClaimTemplates: s.Spec.VolumeClaimTemplates}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := set()
			if tc.change != nil {
				tc.change(s)
			}
			if errs := Validate(s, nil); len(errs) > 0 {
				t.Fatalf("rejected: %v", errs)
			}
		})
	}
	expectOneError(t, Validate(nil, nil), field.ErrorTypeRequired, "spec")
}

func TestValidateUpdate(t *testing.T) {
	inPlaceOnly := func(s *kruiseappsv1beta1.StatefulSet) {
		rolling(s).PodUpdatePolicy = kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType
		s.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: kruiseappspub.InPlaceUpdateReady}}
	}
	following := func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.VolumeClaimUpdateStrategy.Type = kruiseappsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType
	}
	for _, tc := range []struct {
		name         string
		before, edit func(*kruiseappsv1beta1.StatefulSet)
		typ          field.ErrorType
		path         string
	}{
		{name: "the selector", edit: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.Selector.MatchLabels["tier"] = "a"
			s.Spec.Template.Labels["tier"] = "a"
		}, typ: field.ErrorTypeForbidden, path: "spec.selector"},
		{name: "the service", edit: func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.ServiceName = "other" },
			typ: field.ErrorTypeForbidden, path: "spec.serviceName"},
		{name: "the pod management policy", edit: func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement },
			typ: field.ErrorTypeForbidden, path: "spec.podManagementPolicy"},
		{name: "InPlaceOnly with an env change", before: inPlaceOnly, edit: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "2"}}
		}, typ: field.ErrorTypeForbidden, path: "spec.template.spec.containers[0].env"},
		{name: "a claim template added while claims follow them", before: following, edit: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, claimTemplate("logs", "1Gi"))
		}, typ: field.ErrorTypeForbidden, path: "spec.volumeClaimTemplates"},
		{name: "a claim template renamed while claims follow them", before: following, edit: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.VolumeClaimTemplates[0].Name = "other"
			s.Spec.Template.Spec.Containers[0].VolumeMounts[0].Name = "other"
		}, typ: field.ErrorTypeForbidden, path: "spec.volumeClaimTemplates[0].metadata.name"},
		{name: "another access mode while claims follow them", before: following, edit: func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.VolumeClaimTemplates[0].Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}, typ: field.ErrorTypeForbidden, path: "spec.volumeClaimTemplates[0].spec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := set()
			if tc.before != nil {
				tc.before(old)
			}
			cur := old.DeepCopy()
			tc.edit(cur)
			expectOneError(t, Validate(cur, old), tc.typ, tc.path)
		})
	}
}

func TestValidateUpdateAccepts(t *testing.T) {
	old := set()
	rolling(old).PodUpdatePolicy = kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType
	old.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: kruiseappspub.InPlaceUpdateReady}}
	old.Spec.VolumeClaimUpdateStrategy.Type = kruiseappsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType
	cur := old.DeepCopy()
	cur.Spec.Replicas = ptr.To[int32](5)
	cur.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	cur.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1)}
	cur.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	rolling(cur).Partition = ptr.To[int32](2)
	cur.Spec.Lifecycle = &kruiseappspub.Lifecycle{PreDelete: &kruiseappspub.LifecycleHook{FinalizersHandler: []string{"example.com/hook"}}}
	if errs := Validate(cur, old); len(errs) > 0 {
		t.Fatalf("rejected: %v", errs)
	}
	// A rule the stored set already broke does not block an unrelated update.
	old.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromString("9-1")}
	broken := old.DeepCopy()
	broken.Spec.Replicas = ptr.To[int32](1)
	if errs := Validate(broken, old); len(errs) > 0 {
		t.Fatalf("an old fault blocked scaling: %v", errs)
	}
}

func TestValidateExpansion(t *testing.T) {
	class := func(name string, expand *bool, isDefault bool, created int64) storagev1.StorageClass {
		c := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(created, 0)}, AllowVolumeExpansion: expand}
		if isDefault {
			c.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		}
		return c
	}
	old := set()
	old.Spec.VolumeClaimUpdateStrategy.Type = kruiseappsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType
	grown := old.DeepCopy()
	grown.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	named := grown.DeepCopy()
	named.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = ptr.To("fixed")
	oldNamed := old.DeepCopy()
	oldNamed.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = ptr.To("fixed")
	for _, tc := range []struct {
		name     string
		cur, old *kruiseappsv1beta1.StatefulSet
		classes  []storagev1.StorageClass
		typ      field.ErrorType
		path     string
	}{
		{name: "no default class: nothing to check", cur: grown, old: old},
		{name: "the newest default class allows it", cur: grown, old: old,
			classes: []storagev1.StorageClass{class("a", ptr.To(false), true, 1), class("b", ptr.To(true), true, 2)}},
		{name: "the default class forbids it", cur: grown, old: old, classes: []storagev1.StorageClass{class("a", ptr.To(false), true, 1)},
			typ: field.ErrorTypeForbidden, path: "spec.volumeClaimTemplates[0].spec.resources.requests.storage"},
		{name: "the named class forbids it", cur: named, old: oldNamed, classes: []storagev1.StorageClass{class("fixed", ptr.To(false), false, 1)},
			typ: field.ErrorTypeForbidden, path: "spec.volumeClaimTemplates[0].spec.resources.requests.storage"},
		{name: "the named class is missing", cur: named, old: oldNamed,
			typ: field.ErrorTypeNotFound, path: "spec.volumeClaimTemplates[0].spec.storageClassName"},
		{name: "no size change", cur: old, old: old, classes: []storagev1.StorageClass{class("a", ptr.To(false), true, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateExpansion(tc.cur, tc.old, tc.classes)
			if tc.path == "" {
				if len(errs) > 0 {
					t.Fatalf("rejected: %v", errs)
				}
				return
			}
			expectOneError(t, errs, tc.typ, tc.path)
		})
	}
}
