package admission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

type mutation func(*kruiseappsv1alpha1.SidecarSet)

func container(s *kruiseappsv1alpha1.SidecarSet) *kruiseappsv1alpha1.SidecarContainer {
	return &s.Spec.Containers[0]
}

func hotUpgrade(s *kruiseappsv1alpha1.SidecarSet) {
	container(s).UpgradeStrategy = kruiseappsv1alpha1.SidecarContainerUpgradeStrategy{
		UpgradeType: kruiseappsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "busybox:empty"}
}

func initContainer(s *kruiseappsv1alpha1.SidecarSet) *kruiseappsv1alpha1.SidecarContainer {
	s.Spec.InitContainers = []kruiseappsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "init", Image: "busybox"}}}
	return &s.Spec.InitContainers[0]
}

func patch(policy kruiseappsv1alpha1.SidecarSetPatchPolicyType, annotations map[string]string) mutation {
	return func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.PatchPodMetadata = append(s.Spec.PatchPodMetadata, kruiseappsv1alpha1.SidecarSetPatchPodMetadata{Annotations: annotations, PatchPolicy: policy})
	}
}

var allowAll = Options{PatchPodMetadataDefaultsAllowed: true}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate mutation
		want   string
	}{
		{"a name with a dot", func(s *kruiseappsv1alpha1.SidecarSet) { s.Name = "a.b" },
			`metadata.name: Invalid value: "a.b": sidecarset name must consist of alphanumeric characters or '-'`},
		{"a long name", func(s *kruiseappsv1alpha1.SidecarSet) { s.Name = strings.Repeat("a", 64) }, "must be no more than 63 characters"},
		{"no selector", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Selector = nil }, "spec.selector: Required value: no selector defined for SidecarSet"},
		{"an empty selector", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Selector = &metav1.LabelSelector{} },
			"spec.selector: Invalid value: {}: empty selector is not valid for sidecarset."},
		{"an invalid selector", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn}}
		}, "spec.selector.matchExpressions[0].values: Required value"},
		{"namespace and namespaceSelector", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.Namespace = "ns"
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}, "spec.namespaceSelector: Forbidden: namespace and namespaceSelector are mutually exclusive"},
		{"an empty namespaceSelector", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.NamespaceSelector = &metav1.LabelSelector{} },
			"spec.namespaceSelector: Invalid value: {}: empty selector is not valid"},
		{"no containers", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Containers = nil },
			"spec.containers: Required value: no initContainer or container defined for SidecarSet"},
		{"a container without image", func(s *kruiseappsv1alpha1.SidecarSet) { container(s).Image = "" }, "spec.containers[0].image: Required value"},
		{"a container name that is no DNS label", func(s *kruiseappsv1alpha1.SidecarSet) { container(s).Name = "A_b" },
			`spec.containers[0].name: Invalid value: "A_b"`},
		{"a name shared by an init container", func(s *kruiseappsv1alpha1.SidecarSet) { initContainer(s).Name = "scs" },
			`spec.containers[0].name: Duplicate value: "scs"`},
		{"a mount of an unknown volume", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Volumes[0].Name = "other" },
			`spec.containers[0].volumeMounts[0].name: Not found: "log"`},
		{"a device of an unknown volume", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).VolumeDevices = []corev1.VolumeDevice{{Name: "disk", DevicePath: "/dev/x"}}
		}, `spec.containers[0].volumeDevices[0].name: Not found: "disk"`},
		{"two volumes of one name", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Volumes = append(s.Spec.Volumes, s.Spec.Volumes[0]) },
			`spec.volumes[1].name: Duplicate value: "log"`},
		{"a volume without source", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Volumes[0].EmptyDir = nil },
			"spec.volumes[0]: Required value: must specify a volume type"},
		{"a volume of two sources", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/x"}
		}, "spec.volumes[0]: Forbidden: may not specify more than 1 volume type"},
		{"an unknown podInjectPolicy", func(s *kruiseappsv1alpha1.SidecarSet) { container(s).PodInjectPolicy = "Middle" },
			`spec.containers[0].podInjectPolicy: Unsupported value: "Middle": supported values: "BeforeAppContainer", "AfterAppContainer"`},
		{"an unknown shareVolumePolicy", func(s *kruiseappsv1alpha1.SidecarSet) { container(s).ShareVolumePolicy.Type = "all" },
			`spec.containers[0].shareVolumePolicy.type: Unsupported value: "all"`},
		{"an unknown upgradeType", func(s *kruiseappsv1alpha1.SidecarSet) { container(s).UpgradeStrategy.UpgradeType = "Warm" },
			`spec.containers[0].upgradeStrategy.upgradeType: Unsupported value: "Warm"`},
		{"HotUpgrade without empty image", func(s *kruiseappsv1alpha1.SidecarSet) {
			hotUpgrade(s)
			container(s).UpgradeStrategy.HotUpgradeEmptyImage = ""
		}, "spec.containers[0].upgradeStrategy.hotUpgradeEmptyImage: Required value: a HotUpgrade container needs hotUpgradeEmptyImage"},
		{"HotUpgrade onto its own image", func(s *kruiseappsv1alpha1.SidecarSet) {
			hotUpgrade(s)
			container(s).UpgradeStrategy.HotUpgradeEmptyImage = container(s).Image
		}, `spec.containers[0].upgradeStrategy.hotUpgradeEmptyImage: Invalid value: "busybox:1.35.0": must differ from the container's image`},
		{"HotUpgrade of an init container", func(s *kruiseappsv1alpha1.SidecarSet) {
			initContainer(s).UpgradeStrategy.UpgradeType = kruiseappsv1alpha1.SidecarContainerHotUpgrade
		}, "spec.initContainers[0].upgradeStrategy.upgradeType: Forbidden: HotUpgrade is not supported for initContainers"},
		{"resourcesPolicy of an init container", func(s *kruiseappsv1alpha1.SidecarSet) {
			initContainer(s).ResourcesPolicy = &kruiseappsv1alpha1.ResourcesPolicy{}
		}, "spec.initContainers[0].resourcesPolicy: Forbidden: resourcesPolicy is not supported for initContainers"},
		{"resourcesPolicy beside resources", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).ResourcesPolicy = &kruiseappsv1alpha1.ResourcesPolicy{TargetContainersNameRegex: ".*"}
			container(s).Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: {}}
		}, "spec.containers[0].resourcesPolicy: Forbidden: resourcesPolicy and resources cannot be configured together"},
		{"resourcesPolicy without regex", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).ResourcesPolicy = &kruiseappsv1alpha1.ResourcesPolicy{ResourcesExpr: kruiseappsv1alpha1.ResourcesExpr{Limits: &kruiseappsv1alpha1.ResourceExprLimits{}}}
		}, "spec.containers[0].resourcesPolicy.targetContainersNameRegex: Required value: invalid empty regex"},
		{"resourcesPolicy with a bad regex and no expression", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).ResourcesPolicy = &kruiseappsv1alpha1.ResourcesPolicy{TargetContainersNameRegex: "("}
		}, "spec.containers[0].resourcesPolicy.resourcesExpr: Required value: at least one of limits or requests must be configured"},
		{"transferEnv without source", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).TransferEnv = []kruiseappsv1alpha1.TransferEnvVar{{EnvName: "X"}}
		}, "spec.containers[0].transferEnv[0].sourceContainerName: Required value: one of sourceContainerName and sourceContainerNameFrom is required"},
		{"transferEnv without variable", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).TransferEnv = []kruiseappsv1alpha1.TransferEnvVar{{SourceContainerName: "main"}}
		}, "spec.containers[0].transferEnv[0].envName: Required value: one of envName and envNames is required"},
		{"transferEnv from a spec field", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).TransferEnv = []kruiseappsv1alpha1.TransferEnvVar{{EnvName: "X", SourceContainerNameFrom: &kruiseappsv1alpha1.SourceContainerNameSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}}}
		}, `spec.containers[0].transferEnv[0].sourceContainerNameFrom.fieldRef.fieldPath: Unsupported value: "spec.nodeName"`},
		{"transferEnv from a bad label key", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).TransferEnv = []kruiseappsv1alpha1.TransferEnvVar{{EnvName: "X", SourceContainerNameFrom: &kruiseappsv1alpha1.SourceContainerNameSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['a b']"}}}}
		}, `spec.containers[0].transferEnv[0].sourceContainerNameFrom.fieldRef.fieldPath: Invalid value: "metadata.labels['a b']"`},
		{"transferEnv from a subscripted name", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).TransferEnv = []kruiseappsv1alpha1.TransferEnvVar{{EnvName: "X", SourceContainerNameFrom: &kruiseappsv1alpha1.SourceContainerNameSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name['a']"}}}}
		}, "does not support subscript"},
		{"transferEnv fieldRef of another version", func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).TransferEnv = []kruiseappsv1alpha1.TransferEnvVar{{EnvName: "X", SourceContainerNameFrom: &kruiseappsv1alpha1.SourceContainerNameSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}}}
		}, `fieldRef.apiVersion: Unsupported value: "v2"`},
		{"an unknown update type", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Type = "OnDelete" },
			`spec.updateStrategy.type: Unsupported value: "OnDelete": supported values: "NotUpdate", "RollingUpdate"`},
		{"a negative partition", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(-1)) },
			"spec.updateStrategy.partition: Invalid value: -1: must be greater than or equal to 0"},
		{"maxUnavailable over 100%", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("120%"))
		},
			`spec.updateStrategy.maxUnavailable: Invalid value: "120%": must not be greater than 100%`},
		{"maxUnavailable no percentage", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("5"))
		},
			`spec.updateStrategy.maxUnavailable: Invalid value: "5"`},
		{"partition with an update selector", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("10%"))
			s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		}, "spec.updateStrategy.selector: Forbidden: Partition and Selector cannot be used together"},
		{"an empty update selector", func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{} },
			"spec.updateStrategy.selector: Invalid value: {}: empty selector is not valid"},
		{"weight and order priorities", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.PriorityStrategy = &kruiseappspub.UpdatePriorityStrategy{
				WeightPriority: []kruiseappspub.UpdatePriorityWeightTerm{{Weight: 1}}, OrderPriority: []kruiseappspub.UpdatePriorityOrderTerm{{OrderedKey: "k"}}}
		}, "spec.updateStrategy.priorityStrategy: Invalid value: only one of weightPriority and orderPriority can be used"},
		{"a repeated scatter term", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.ScatterStrategy = kruiseappspub.UpdateScatterStrategy{{Key: "k", Value: "v"}, {Key: "k", Value: "v"}}
		}, "spec.updateStrategy.scatterStrategy: Invalid value"},
		{"a rolling native sidecar", func(s *kruiseappsv1alpha1.SidecarSet) {
			initContainer(s).RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}, "spec.initContainers[0].restartPolicy: Forbidden: The initContainer in-place upgrade is not currently supported"},
		{"a revision naming nothing", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.InjectionStrategy.Revision = &kruiseappsv1alpha1.SidecarSetInjectRevision{Policy: kruiseappsv1alpha1.AlwaysSidecarSetInjectRevisionPolicy}
		}, "spec.injectionStrategy.revision: Required value: revisionName and customVersion cannot be empty simultaneously"},
		{"an unknown revision policy", func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.InjectionStrategy.Revision = &kruiseappsv1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To("r"), Policy: "Sometimes"}
		}, `spec.injectionStrategy.revision.policy: Unsupported value: "Sometimes": supported values: "Always", "Partial"`},
		{"a patch without annotations", patch(kruiseappsv1alpha1.SidecarSetRetainPatchPolicy, nil),
			"spec.patchPodMetadata[0].annotations: Required value: no annotations defined for SidecarSet"},
		{"a patch of an invalid key", patch(kruiseappsv1alpha1.SidecarSetRetainPatchPolicy, map[string]string{"a b": "c"}),
			`spec.patchPodMetadata[0].annotations: Invalid value: "a b"`},
		{"a patch of an unknown policy", patch("Append", map[string]string{"a": "b"}),
			`spec.patchPodMetadata[0].patchPolicy: Unsupported value: "Append"`},
		{"a MergePatchJson value that is no JSON", patch(kruiseappsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, map[string]string{"a": "{x"}),
			`spec.patchPodMetadata[0].annotations[a]: Invalid value: "{x": a MergePatchJson value must be JSON`},
		{"one key patched twice", func(s *kruiseappsv1alpha1.SidecarSet) {
			patch(kruiseappsv1alpha1.SidecarSetRetainPatchPolicy, map[string]string{"a": "1"})(s)
			patch(kruiseappsv1alpha1.SidecarSetOverwritePatchPolicy, map[string]string{"a": "2"})(s)
		}, `spec.patchPodMetadata[1].annotations[a]: Duplicate value: "patch annotation[a] already exist"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sidecarSet()
			tt.mutate(s)
			if agg := Validate(s, nil, Cluster{}, allowAll).ToAggregate(); agg == nil || !strings.Contains(agg.Error(), tt.want) {
				t.Fatalf("errors %v, want one with %q", agg, tt.want)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	for name, mutate := range map[string]mutation{
		"defaults": func(*kruiseappsv1alpha1.SidecarSet) {},
		"init containers only": func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.Containers = nil
			initContainer(s)
		},
		"a native sidecar without updates": func(s *kruiseappsv1alpha1.SidecarSet) {
			initContainer(s).RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			s.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.NotUpdateSidecarSetStrategyType
		},
		"HotUpgrade": hotUpgrade,
		"AfterAppContainer": func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).PodInjectPolicy = kruiseappsv1alpha1.AfterAppContainerType
		},
		"a namespace": func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.Namespace = "ns" },
		"a namespaceSelector": func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		},
		"an update selector": func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		},
		"percentages": func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("100%"))
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("20%"))
		},
		"bad rolling fields without updates": func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.NotUpdateSidecarSetStrategyType
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(-1))
		},
		"transferEnv by name and from a label": func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).TransferEnv = []kruiseappsv1alpha1.TransferEnvVar{
				{SourceContainerName: "main", EnvName: "PROXY_IP"},
				{EnvNames: []string{"A", "B"}, SourceContainerNameFrom: &kruiseappsv1alpha1.SourceContainerNameSource{
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations['App/Main']"}}},
			}
		},
		"a resourcesPolicy": func(s *kruiseappsv1alpha1.SidecarSet) {
			container(s).ResourcesPolicy = &kruiseappsv1alpha1.ResourcesPolicy{TargetContainersNameRegex: "^app$",
				ResourcesExpr: kruiseappsv1alpha1.ResourcesExpr{Requests: &kruiseappsv1alpha1.ResourceExprRequests{CPU: "cpu*50%"}}}
		},
		"a revision by custom version": func(s *kruiseappsv1alpha1.SidecarSet) {
			s.Spec.InjectionStrategy.Revision = &kruiseappsv1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("v1"),
				Policy: kruiseappsv1alpha1.PartialSidecarSetInjectRevisionPolicy}
		},
		"patches": func(s *kruiseappsv1alpha1.SidecarSet) {
			patch(kruiseappsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, map[string]string{"cfg": `{"a":1}`})(s)
			patch(kruiseappsv1alpha1.SidecarSetOverwritePatchPolicy, map[string]string{"b": "x"})(s)
		},
	} {
		s := sidecarSet()
		mutate(s)
		if errs := Validate(s, nil, Cluster{}, allowAll); len(errs) > 0 {
			t.Errorf("%s: rejected: %v", name, errs)
		}
	}
	if errs := Validate(nil, nil, Cluster{}, Options{}); len(errs) != 1 {
		t.Errorf("nil SidecarSet: %v", errs)
	}
}

// The seed's SidecarSets are accepted once defaulted (031 is a fragment, without selector and containers).
func TestSeedSidecarSetsAreAccepted(t *testing.T) {
	for _, file := range []string{"028-sidecarset-scs.yaml", "029-sidecarset-scs.yaml", "030-sidecarset-scs.yaml",
		"032-sidecarset-scs.yaml", "033-sidecarset-hotupgrade-sidecarset.yaml"} {
		raw, err := os.ReadFile(filepath.Join("../../test/e2e/testdata/seed", file))
		if err != nil {
			t.Fatal(err)
		}
		s := &kruiseappsv1alpha1.SidecarSet{}
		if err := yaml.UnmarshalStrict(raw, s); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		Default(s, nil)
		if errs := Validate(s, nil, Cluster{}, Options{}); len(errs) > 0 {
			t.Errorf("%s rejected: %v", file, errs)
		}
	}
}
