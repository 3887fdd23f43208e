package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

type mutation func(cs *kruiseappsv1alpha1.CloneSet)

func intOrStr(v intstr.IntOrString) *intstr.IntOrString { return &v }

func strategy(f func(u *kruiseappsv1alpha1.CloneSetUpdateStrategy)) mutation {
	return func(cs *kruiseappsv1alpha1.CloneSet) { f(&cs.Spec.UpdateStrategy) }
}

func partition(v intstr.IntOrString) mutation {
	return strategy(func(u *kruiseappsv1alpha1.CloneSetUpdateStrategy) { u.Partition = &v })
}

func maxUnavailable(v intstr.IntOrString) mutation {
	return strategy(func(u *kruiseappsv1alpha1.CloneSetUpdateStrategy) { u.MaxUnavailable = &v })
}

func maxSurge(v intstr.IntOrString) mutation {
	return strategy(func(u *kruiseappsv1alpha1.CloneSetUpdateStrategy) { u.MaxSurge = &v })
}

func updateType(t kruiseappsv1alpha1.CloneSetUpdateStrategyType) mutation {
	return strategy(func(u *kruiseappsv1alpha1.CloneSetUpdateStrategy) { u.Type = t })
}

func podSpec(f func(s *corev1.PodSpec)) mutation {
	return func(cs *kruiseappsv1alpha1.CloneSet) { f(&cs.Spec.Template.Spec) }
}

func claims(names ...string) mutation {
	return func(cs *kruiseappsv1alpha1.CloneSet) {
		for _, n := range names {
			cs.Spec.VolumeClaimTemplates = append(cs.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
	}
}

func podsToDelete(names ...string) mutation {
	return func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = names }
}

// TestValidateCreateRejects has one rejected example per rule; each must yield exactly one error, of the
// given type at the given field.
func TestValidateCreateRejects(t *testing.T) {
	cases := []struct {
		name     string
		mutate   mutation
		pods     map[string]*corev1.Pod
		wantType field.ErrorType
		wantPath string
	}{
		{"selector missing", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Selector = nil }, nil,
			field.ErrorTypeRequired, "spec.selector"},
		{"selector empty", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Selector = &metav1.LabelSelector{} }, nil,
			field.ErrorTypeInvalid, "spec.selector"},
		{"selector operator", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}
		}, nil, field.ErrorTypeInvalid, "spec.selector.matchExpressions[0].operator"},
		{"selector does not match the template", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Selector.MatchLabels["tier"] = "x" }, nil,
			field.ErrorTypeInvalid, "spec.template.metadata.labels"},
		{"template label", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Template.Labels["bad key!"] = "x" }, nil,
			field.ErrorTypeInvalid, "spec.template.metadata.labels"},
		{"activeDeadlineSeconds", podSpec(func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](5) }), nil,
			field.ErrorTypeForbidden, "spec.template.spec.activeDeadlineSeconds"},
		{"restartPolicy", podSpec(func(s *corev1.PodSpec) { s.RestartPolicy = corev1.RestartPolicyNever }), nil,
			field.ErrorTypeNotSupported, "spec.template.spec.restartPolicy"},
		{"ephemeral containers", podSpec(func(s *corev1.PodSpec) {
			s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "x"}}}
		}), nil, field.ErrorTypeForbidden, "spec.template.spec.ephemeralContainers"},
		{"no containers", podSpec(func(s *corev1.PodSpec) { s.Containers = nil }), nil,
			field.ErrorTypeRequired, "spec.template.spec.containers"},
		{"container name duplicated", podSpec(func(s *corev1.PodSpec) { s.Containers = append(s.Containers, s.Containers[0]) }), nil,
			field.ErrorTypeDuplicate, "spec.template.spec.containers[1].name"},
		{"init container named like an app container", podSpec(func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "main", Image: "x"}}
		}), nil, field.ErrorTypeDuplicate, "spec.template.spec.containers[0].name"},
		{"container name not a DNS label", podSpec(func(s *corev1.PodSpec) { s.Containers[0].Name = "Main" }), nil,
			field.ErrorTypeInvalid, "spec.template.spec.containers[0].name"},
		{"container image empty", podSpec(func(s *corev1.PodSpec) { s.Containers[0].Image = "" }), nil,
			field.ErrorTypeRequired, "spec.template.spec.containers[0].image"},
		{"volume mount of no volume", podSpec(func(s *corev1.PodSpec) {
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/d"}}
		}), nil, field.ErrorTypeNotFound, "spec.template.spec.containers[0].volumeMounts[0].name"},
		{"volume name duplicated", podSpec(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "v"}, {Name: "v"}}
		}), nil, field.ErrorTypeDuplicate, "spec.template.spec.volumes[1].name"},
		{"claim template names duplicated", claims("data", "data"), nil,
			field.ErrorTypeDuplicate, "spec.volumeClaimTemplates[1].metadata.name"},
		{"claim template name invalid", claims("Data"), nil,
			field.ErrorTypeInvalid, "spec.volumeClaimTemplates[0].metadata.name"},
		{"claim template named like a volume", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data"}}
			claims("data")(cs)
		}, nil, field.ErrorTypeDuplicate, "spec.volumeClaimTemplates[0].metadata.name"},
		{"replicas negative", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](-1) }, nil,
			field.ErrorTypeInvalid, "spec.replicas"},
		{"revisionHistoryLimit negative", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.RevisionHistoryLimit = ptr.To[int32](-1) }, nil,
			field.ErrorTypeInvalid, "spec.revisionHistoryLimit"},
		{"minReadySeconds negative", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.MinReadySeconds = -1 }, nil,
			field.ErrorTypeInvalid, "spec.minReadySeconds"},
		{"progressDeadlineSeconds not above minReadySeconds", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.MinReadySeconds, cs.Spec.ProgressDeadlineSeconds = 30, ptr.To[int32](30)
		}, nil, field.ErrorTypeInvalid, "spec.progressDeadlineSeconds"},
		{"update type unknown", updateType("Rolling"), nil,
			field.ErrorTypeNotSupported, "spec.updateStrategy.type"},
		{"update type empty", updateType(""), nil,
			field.ErrorTypeNotSupported, "spec.updateStrategy.type"},
		{"partition negative", partition(intstr.FromInt32(-1)), nil,
			field.ErrorTypeInvalid, "spec.updateStrategy.partition"},
		{"partition above 100%", partition(intstr.FromString("150%")), nil,
			field.ErrorTypeInvalid, "spec.updateStrategy.partition"},
		{"partition numeric string", partition(intstr.FromString("5")), nil,
			field.ErrorTypeInvalid, "spec.updateStrategy.partition"},
		{"partition text", partition(intstr.FromString("abc")), nil,
			field.ErrorTypeInvalid, "spec.updateStrategy.partition"},
		{"negative percentage", partition(intstr.FromString("-5%")), nil,
			field.ErrorTypeInvalid, "spec.updateStrategy.partition"},
		{"maxUnavailable numeric string", maxUnavailable(intstr.FromString("5")), nil,
			field.ErrorTypeInvalid, "spec.updateStrategy.maxUnavailable"},
		{"maxUnavailable negative", maxUnavailable(intstr.FromInt32(-1)), nil,
			field.ErrorTypeInvalid, "spec.updateStrategy.maxUnavailable"},
		{"maxSurge numeric string", maxSurge(intstr.FromString("5")), nil,
			field.ErrorTypeInvalid, "spec.updateStrategy.maxSurge"},
		{"maxSurge negative", maxSurge(intstr.FromInt32(-2)), nil,
			field.ErrorTypeInvalid, "spec.updateStrategy.maxSurge"},
		{"maxUnavailable and maxSurge both 0", strategy(func(u *kruiseappsv1alpha1.CloneSetUpdateStrategy) {
			u.MaxUnavailable, u.MaxSurge = intOrStr(intstr.FromString("0%")), intOrStr(intstr.FromInt32(0))
		}), nil, field.ErrorTypeInvalid, "spec.updateStrategy.maxUnavailable"},
		{"maxSurge with InPlaceOnly", strategy(func(u *kruiseappsv1alpha1.CloneSetUpdateStrategy) {
			u.Type, u.MaxSurge = kruiseappsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType, intOrStr(intstr.FromString("10%"))
		}), nil, field.ErrorTypeInvalid, "spec.updateStrategy.maxSurge"},
		{"priorityStrategy", strategy(func(u *kruiseappsv1alpha1.CloneSetUpdateStrategy) {
			u.PriorityStrategy = &kruiseappspub.UpdatePriorityStrategy{OrderPriority: []kruiseappspub.UpdatePriorityOrderTerm{{}}}
		}), nil, field.ErrorTypeInvalid, "spec.updateStrategy.priorityStrategy"},
		{"scatterStrategy", strategy(func(u *kruiseappsv1alpha1.CloneSetUpdateStrategy) {
			u.ScatterStrategy = kruiseappspub.UpdateScatterStrategy{{Key: "zone", Value: "a"}, {Key: "zone", Value: "a"}}
		}), nil, field.ErrorTypeInvalid, "spec.updateStrategy.scatterStrategy"},
		{"scale maxUnavailable negative", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.ScaleStrategy.MaxUnavailable = intOrStr(intstr.FromInt32(-1))
		}, nil, field.ErrorTypeInvalid, "spec.scaleStrategy.maxUnavailable"},
		{"podsToDelete duplicated", podsToDelete("web-a", "web-a"), podMap(pod("web-a")),
			field.ErrorTypeDuplicate, "spec.scaleStrategy.podsToDelete[1]"},
		{"podsToDelete missing pod", podsToDelete("web-a", "web-b"), podMap(pod("web-a")),
			field.ErrorTypeInvalid, "spec.scaleStrategy.podsToDelete[1]"},
		{"podsToDelete pod of another owner", podsToDelete("web-a"), podMap(ownedBy(pod("web-a"), "other")),
			field.ErrorTypeInvalid, "spec.scaleStrategy.podsToDelete[0]"},
		{"podsToDelete pod without owner", podsToDelete("web-a"), podMap(ownedBy(pod("web-a"), "")),
			field.ErrorTypeInvalid, "spec.scaleStrategy.podsToDelete[0]"},
		{"podsToDelete terminating pod", podsToDelete("web-a"), podMap(terminating(pod("web-a"))),
			field.ErrorTypeInvalid, "spec.scaleStrategy.podsToDelete[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := cloneSet()
			tc.mutate(cs)
			expectOneError(t, Validate(cs, nil, tc.pods), tc.wantType, tc.wantPath)
		})
	}
}

func ownedBy(p *corev1.Pod, uid string) *corev1.Pod {
	if uid == "" {
		p.OwnerReferences = nil
		return p
	}
	p.OwnerReferences[0].UID = "other"
	return p
}

func terminating(p *corev1.Pod) *corev1.Pod {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

func expectOneError(t *testing.T, errs field.ErrorList, wantType field.ErrorType, wantPath string) {
	t.Helper()
	if len(errs) != 1 {
		t.Fatalf("got %d errors, want one %s at %s: %v", len(errs), wantType, wantPath, errs)
	}
	if errs[0].Type != wantType || errs[0].Field != wantPath {
		t.Fatalf("got %v, want %s at %s", errs[0], wantType, wantPath)
	}
}

func TestValidateCreateAccepts(t *testing.T) {
	cases := []struct {
		name   string
		mutate mutation
		pods   map[string]*corev1.Pod
	}{
		{"defaulted", func(*kruiseappsv1alpha1.CloneSet) {}, nil},
		{"unset fields read as defaults", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.Replicas, cs.Spec.RevisionHistoryLimit = nil, nil
			cs.Spec.UpdateStrategy = kruiseappsv1alpha1.CloneSetUpdateStrategy{Type: kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType}
		}, nil},
		{"OnDelete", updateType(kruiseappsv1alpha1.OnDeleteCloneSetUpdateStrategyType), nil},
		{"percentages", strategy(func(u *kruiseappsv1alpha1.CloneSetUpdateStrategy) {
			u.Partition, u.MaxUnavailable, u.MaxSurge = intOrStr(intstr.FromString("100%")), intOrStr(intstr.FromString("0%")), intOrStr(intstr.FromString("150%"))
		}), nil},
		{"surge only", strategy(func(u *kruiseappsv1alpha1.CloneSetUpdateStrategy) {
			u.MaxUnavailable, u.MaxSurge = intOrStr(intstr.FromInt32(0)), intOrStr(intstr.FromInt32(1))
		}), nil},
		{"no replicas, nothing to roll", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.Replicas = ptr.To[int32](0)
			cs.Spec.UpdateStrategy.MaxUnavailable = intOrStr(intstr.FromInt32(0))
		}, nil},
		{"progress deadline", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.MinReadySeconds, cs.Spec.ProgressDeadlineSeconds = 10, ptr.To[int32](600)
		}, nil},
		{"claim template mounted", func(cs *kruiseappsv1alpha1.CloneSet) {
			claims("data")(cs)
			cs.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/d"}}
		}, nil},
		{"podsToDelete of own pods", podsToDelete("web-a", "web-b"), podMap(pod("web-a"), pod("web-b"))},
		{"priority and scatter", strategy(func(u *kruiseappsv1alpha1.CloneSetUpdateStrategy) {
			u.PriorityStrategy = &kruiseappspub.UpdatePriorityStrategy{OrderPriority: []kruiseappspub.UpdatePriorityOrderTerm{{OrderedKey: "k"}}}
			u.ScatterStrategy = kruiseappspub.UpdateScatterStrategy{{Key: "zone", Value: "a"}}
		}), nil},
		{"lifecycle", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.Lifecycle = &kruiseappspub.Lifecycle{PreDelete: &kruiseappspub.LifecycleHook{FinalizersHandler: []string{"example.com/x"}}}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := cloneSet()
			tc.mutate(cs)
			if errs := Validate(cs, nil, tc.pods); len(errs) > 0 {
				t.Fatalf("rejected: %v", errs)
			}
		})
	}
}

func TestValidateNil(t *testing.T) {
	expectOneError(t, Validate(nil, nil, nil), field.ErrorTypeRequired, "spec")
	if names := NewPodsToDelete(nil, nil); names != nil {
		t.Errorf("NewPodsToDelete(nil) = %v", names)
	}
}
