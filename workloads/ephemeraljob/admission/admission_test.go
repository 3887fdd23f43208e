package admission

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func validJob(mutate ...func(*kruiseappsv1alpha1.EphemeralJob)) *kruiseappsv1alpha1.EphemeralJob {
	j := &kruiseappsv1alpha1.EphemeralJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "diag"},
		Spec: kruiseappsv1alpha1.EphemeralJobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: kruiseappsv1alpha1.EphemeralContainerTemplateSpec{EphemeralContainers: []corev1.EphemeralContainer{{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1.36", Command: []string{"sh", "-c", "date"},
					Env: []corev1.EnvVar{{Name: "MODE", Value: "x"}}, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError},
				TargetContainerName: "app",
			}}},
		},
	}
	for _, m := range mutate {
		m(j)
	}
	return j
}

func container(j *kruiseappsv1alpha1.EphemeralJob) *corev1.EphemeralContainerCommon {
	return &j.Spec.Template.EphemeralContainers[0].EphemeralContainerCommon
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*kruiseappsv1alpha1.EphemeralJob)
		// want are the rejections, as "field: message" prefixes; none means valid.
		want []string
	}{
		{name: "valid", mutate: func(*kruiseappsv1alpha1.EphemeralJob) {}},
		{name: "an empty selector selects every pod, as upstream allows", mutate: func(j *kruiseappsv1alpha1.EphemeralJob) {
			j.Spec.Selector = &metav1.LabelSelector{}
		}},
		{name: "no containers: the job reports Error, as upstream", mutate: func(j *kruiseappsv1alpha1.EphemeralJob) {
			j.Spec.Template.EphemeralContainers = nil
		}},
		{name: "selector required", mutate: func(j *kruiseappsv1alpha1.EphemeralJob) { j.Spec.Selector = nil },
			want: []string{"spec.selector: Required value: selector must be not empty"}},
		{name: "selector operator", mutate: func(j *kruiseappsv1alpha1.EphemeralJob) {
			j.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}
		}, want: []string{"spec.selector.matchExpressions[0].operator: Invalid value"}},
		{name: "name required", mutate: func(j *kruiseappsv1alpha1.EphemeralJob) { container(j).Name = "" },
			want: []string{"spec.template.ephemeralContainers[0].name: Required value"}},
		{name: "name a DNS label", mutate: func(j *kruiseappsv1alpha1.EphemeralJob) { container(j).Name = "Debug_1" },
			want: []string{`spec.template.ephemeralContainers[0].name: Invalid value: "Debug_1"`}},
		{name: "names clash", mutate: func(j *kruiseappsv1alpha1.EphemeralJob) {
			j.Spec.Template.EphemeralContainers = append(j.Spec.Template.EphemeralContainers, j.Spec.Template.EphemeralContainers[0])
		}, want: []string{`spec.template.ephemeralContainers[1].name: Duplicate value: "debug"`}},
		{name: "image required", mutate: func(j *kruiseappsv1alpha1.EphemeralJob) { container(j).Image = "" },
			want: []string{"spec.template.ephemeralContainers[0].image: Required value"}},
		{name: "ports, resources, probes, lifecycle", mutate: func(j *kruiseappsv1alpha1.EphemeralJob) {
			c := container(j)
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			c.ReadinessProbe = &corev1.Probe{}
			c.Lifecycle = &corev1.Lifecycle{}
		}, want: []string{
			"spec.template.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
			"spec.template.ephemeralContainers[0].resources: Forbidden: cannot be set for an Ephemeral Container",
			"spec.template.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container",
			"spec.template.ephemeralContainers[0].lifecycle: Forbidden: cannot be set for an Ephemeral Container",
		}},
		{name: "subPath and subPathExpr", mutate: func(j *kruiseappsv1alpha1.EphemeralJob) {
			container(j).VolumeMounts[0].SubPath = "x"
			container(j).VolumeMounts[0].SubPathExpr = "$(POD)"
		}, want: []string{
			"spec.template.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container",
			"spec.template.ephemeralContainers[0].volumeMounts[0].subPathExpr: Forbidden: cannot be set for an Ephemeral Container",
		}},
		{name: "env name", mutate: func(j *kruiseappsv1alpha1.EphemeralJob) { container(j).Env[0].Name = "" },
			want: []string{"spec.template.ephemeralContainers[0].env[0].name: Required value"}},
		{name: "pull and message policies", mutate: func(j *kruiseappsv1alpha1.EphemeralJob) {
			container(j).ImagePullPolicy = "Sometimes"
			container(j).TerminationMessagePolicy = "Stdout"
		}, want: []string{
			`spec.template.ephemeralContainers[0].imagePullPolicy: Unsupported value: "Sometimes"`,
			`spec.template.ephemeralContainers[0].terminationMessagePolicy: Unsupported value: "Stdout"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(validJob(tc.mutate), nil)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d: %v", len(errs), len(tc.want), errs)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tc.want[i]) {
					t.Errorf("error %d: %q, want prefix %q", i, e.Error(), tc.want[i])
				}
			}
		})
	}
}

func TestValidateUpdateRatchets(t *testing.T) {
	bad := validJob(func(j *kruiseappsv1alpha1.EphemeralJob) { container(j).Image = "" })
	paused := bad.DeepCopy()
	paused.Spec.Paused = true
	if errs := Validate(paused, bad); len(errs) != 0 {
		t.Errorf("an update keeping an old error is refused: %v", errs)
	}
	worse := paused.DeepCopy()
	container(worse).Name = ""
	got := Validate(worse, bad)
	if diff := cmp.Diff([]string{"spec.template.ephemeralContainers[0].name: Required value"}, errorStrings(got)); diff != "" {
		t.Errorf("new errors (-want +got):\n%s", diff)
	}
}

func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}
