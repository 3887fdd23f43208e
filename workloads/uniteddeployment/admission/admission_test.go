package admission

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// valid is a defaulted UnitedDeployment of CloneSets over three zones.
func valid() *kruiseappsv1alpha1.UnitedDeployment {
	ud := &kruiseappsv1alpha1.UnitedDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	ud.Spec.Replicas = ptr.To[int32](6)
	ud.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	ud.Spec.Template.CloneSetTemplate = &kruiseappsv1alpha1.CloneSetTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	ud.Spec.Template.CloneSetTemplate.Spec.Template = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}},
	}
	for _, z := range []string{"zone-a", "zone-b", "zone-c"} {
		ud.Spec.Topology.Subsets = append(ud.Spec.Topology.Subsets, kruiseappsv1alpha1.Subset{Name: z,
			NodeSelectorTerm: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}})
	}
	Default(ud, nil)
	return ud
}

func val(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestDefault(t *testing.T) {
	ud := &kruiseappsv1alpha1.UnitedDeployment{}
	ud.Spec.Template.DeploymentTemplate = &kruiseappsv1alpha1.DeploymentTemplateSpec{}
	ud.Spec.Template.DeploymentTemplate.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx"}}
	Default(ud, nil)
	s := ud.Spec
	if *s.Replicas != 1 || *s.RevisionHistoryLimit != 10 || s.UpdateStrategy.Type != kruiseappsv1alpha1.ManualUpdateStrategyType || s.UpdateStrategy.ManualUpdate == nil {
		t.Errorf("spec %+v", s)
	}
	pod := s.Template.DeploymentTemplate.Spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyAlways || pod.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("pod template not defaulted: %+v", pod)
	}
	again := ud.DeepCopy()
	Default(again, ud)
	if again.Spec.Template.DeploymentTemplate.Spec.Template.Spec.DNSPolicy != pod.DNSPolicy {
		t.Error("defaulting twice changed the template")
	}
	Default(nil, nil)
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*kruiseappsv1alpha1.UnitedDeployment)
		want   string // "" when valid
	}{
		{name: "valid", change: func(*kruiseappsv1alpha1.UnitedDeployment) {}},
		{name: "no template", change: func(u *kruiseappsv1alpha1.UnitedDeployment) { u.Spec.Template = kruiseappsv1alpha1.SubsetTemplate{} },
			want: "spec.template: Required value: should provide one of statefulSetTemplate"},
		{name: "two templates", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.Template.DeploymentTemplate = &kruiseappsv1alpha1.DeploymentTemplateSpec{}
		}, want: `spec.template: Invalid value: ["cloneSetTemplate","deploymentTemplate"]: should provide only one`},
		{name: "duplicate subset", change: func(u *kruiseappsv1alpha1.UnitedDeployment) { u.Spec.Topology.Subsets[2].Name = "zone-a" },
			want: `spec.topology.subsets[2].name: Duplicate value: "zone-a"`},
		{name: "subset name not a DNS label", change: func(u *kruiseappsv1alpha1.UnitedDeployment) { u.Spec.Topology.Subsets[1].Name = "Zone_B" },
			want: `spec.topology.subsets[1].name: Invalid value: "Zone_B": invalid subset name`},
		{name: "missing subset name", change: func(u *kruiseappsv1alpha1.UnitedDeployment) { u.Spec.Topology.Subsets[0].Name = "" },
			want: "spec.topology.subsets[0].name: Required value"},
		{name: "fixed replicas above the total", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.Topology.Subsets[0].Replicas, u.Spec.Topology.Subsets[1].Replicas = val(intstr.FromInt32(4)), val(intstr.FromString("50%"))
		}, want: "sum of indicated subset replicas 7 should not be greater than UnitedDeployment replicas 6"},
		{name: "all fixed, short", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			for i := range u.Spec.Topology.Subsets {
				u.Spec.Topology.Subsets[i].Replicas = val(intstr.FromInt32(1))
			}
		}, want: "should equal UnitedDeployment replicas 6"},
		{name: "percentage above 100", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.Topology.Subsets[0].Replicas = val(intstr.FromString("120%"))
		},
			want: `spec.topology.subsets[0].replicas: Invalid value: "120%"`},
		{name: "replicas with bounds", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.Topology.Subsets[0].Replicas, u.Spec.Topology.Subsets[1].MaxReplicas = val(intstr.FromInt32(1)), val(intstr.FromInt32(2))
		}, want: "mutually exclusive"},
		{name: "min above max", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.Topology.Subsets[0].MinReplicas, u.Spec.Topology.Subsets[0].MaxReplicas = val(intstr.FromInt32(3)), val(intstr.FromInt32(2))
		}, want: "spec.topology.subsets[0].minReplicas: Invalid value: 3: must be less than or equal to maxReplicas (2)"},
		{name: "every subset bounded", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			for i := range u.Spec.Topology.Subsets {
				u.Spec.Topology.Subsets[i].MaxReplicas = val(intstr.FromInt32(3))
			}
		}, want: "at least one subset.maxReplicas must be empty"},
		{name: "selector does not match", change: func(u *kruiseappsv1alpha1.UnitedDeployment) { u.Spec.Selector.MatchLabels["app"] = "api" },
			want: "spec.template.cloneSetTemplate.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"},
		{name: "no selector", change: func(u *kruiseappsv1alpha1.UnitedDeployment) { u.Spec.Selector = nil }, want: "spec.selector: Required value"},
		{name: "empty selector", change: func(u *kruiseappsv1alpha1.UnitedDeployment) { u.Spec.Selector = &metav1.LabelSelector{} },
			want: "spec.selector: Invalid value"},
		{name: "partition of an unknown subset", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.UpdateStrategy.ManualUpdate.Partitions = map[string]int32{"zone-x": 1}
		}, want: `spec.updateStrategy.manualUpdate.partitions[zone-x]: Invalid value: "zone-x": subset zone-x does not exist`},
		{name: "bad node operator", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.Topology.Subsets[0].NodeSelectorTerm.MatchExpressions[0].Operator = "Near"
		}, want: `spec.topology.subsets[0].nodeSelectorTerm.matchExpressions[0].operator: Unsupported value: "Near"`},
		{name: "no containers", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.Template.CloneSetTemplate.Spec.Template.Spec.Containers = nil
		}, want: "spec.template.cloneSetTemplate.spec.template.spec.containers: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := valid()
			tc.change(u)
			errs := Validate(u, nil)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	old := valid()
	for _, tc := range []struct {
		name   string
		change func(*kruiseappsv1alpha1.UnitedDeployment)
		want   string
	}{
		{name: "rescale, repartition, new template, new subset", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.Replicas = ptr.To[int32](9)
			u.Spec.UpdateStrategy.ManualUpdate.Partitions = map[string]int32{"zone-a": 2}
			u.Spec.Template.CloneSetTemplate.Spec.Template.Spec.Containers[0].Image = "nginx:2"
			u.Spec.Topology.Subsets = append(u.Spec.Topology.Subsets, kruiseappsv1alpha1.Subset{Name: "zone-d"})
		}},
		{name: "selector", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.Selector.MatchLabels["tier"] = "x"
			u.Spec.Template.CloneSetTemplate.Labels["tier"] = "x"
			u.Spec.Template.CloneSetTemplate.Spec.Template.Labels["tier"] = "x"
		}, want: "spec.selector: Forbidden: field is immutable"},
		{name: "node term of a kept subset", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.Topology.Subsets[1].NodeSelectorTerm.MatchExpressions[0].Values = []string{"zone-z"}
		}, want: "spec.topology.subsets[1].nodeSelectorTerm: Forbidden: may not be changed in an update"},
		{name: "tolerations of a kept subset", change: func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.Topology.Subsets[0].Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		}, want: "spec.topology.subsets[0].tolerations: Forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := old.DeepCopy()
			tc.change(u)
			errs := Validate(u, old)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
	if errs := Validate(nil, nil); len(errs) == 0 {
		t.Error("nil accepted")
	}
}
