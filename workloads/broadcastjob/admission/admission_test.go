package admission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// broadcastJob is a small valid job, defaulted as the mutating webhook leaves it.
func broadcastJob() *kruiseappsv1alpha1.BroadcastJob {
	j := &kruiseappsv1alpha1.BroadcastJob{
		ObjectMeta: metav1.ObjectMeta{Name: "bcj", Namespace: "ns"},
		Spec: kruiseappsv1alpha1.BroadcastJobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}},
	}
	Default(j, nil)
	return j
}

func TestDefault(t *testing.T) {
	j := &kruiseappsv1alpha1.BroadcastJob{Spec: kruiseappsv1alpha1.BroadcastJobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	Default(j, nil)
	s := j.Spec
	if s.CompletionPolicy.Type != kruiseappsv1alpha1.Always || s.FailurePolicy.Type != kruiseappsv1alpha1.FailurePolicyTypeFailFast ||
		*s.Parallelism != intstr.FromInt32(1<<31-1) {
		t.Errorf("completionPolicy %q failurePolicy %q parallelism %v", s.CompletionPolicy.Type, s.FailurePolicy.Type, s.Parallelism)
	}
	ps := s.Template.Spec
	if ps.RestartPolicy != corev1.RestartPolicyOnFailure || ps.DNSPolicy != corev1.DNSClusterFirst || ps.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("template: restartPolicy %q dnsPolicy %q imagePullPolicy %q", ps.RestartPolicy, ps.DNSPolicy, ps.Containers[0].ImagePullPolicy)
	}
	again := j.DeepCopy()
	Default(again, j)
	if diff := cmp.Diff(j, again); diff != "" {
		t.Errorf("defaulting twice changed (-once +twice):\n%s", diff)
	}
	set := &kruiseappsv1alpha1.BroadcastJob{Spec: kruiseappsv1alpha1.BroadcastJobSpec{
		Parallelism:      ptr.To(intstr.FromString("10%")),
		CompletionPolicy: kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Never},
		FailurePolicy:    kruiseappsv1alpha1.FailurePolicy{Type: kruiseappsv1alpha1.FailurePolicyTypeContinue},
		Template:         corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}},
	}}
	Default(set, nil)
	if set.Spec.Parallelism.StrVal != "10%" || set.Spec.CompletionPolicy.Type != kruiseappsv1alpha1.Never ||
		set.Spec.FailurePolicy.Type != kruiseappsv1alpha1.FailurePolicyTypeContinue || set.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("values set were changed: %+v", set.Spec)
	}
	Default(nil, nil)
}

// On update the template is defaulted only when it changed, as upstream does.
func TestDefaultTemplateOnlyWhenChanged(t *testing.T) {
	old := broadcastJob()
	old.Spec.Template.Spec.DNSPolicy = corev1.DNSDefault
	cur := old.DeepCopy()
	cur.Spec.Template.Spec.SchedulerName = ""
	Default(cur, cur.DeepCopy())
	if cur.Spec.Template.Spec.SchedulerName != "" {
		t.Error("an unchanged template was defaulted")
	}
	Default(cur, old)
	if cur.Spec.Template.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Error("a changed template was not defaulted")
	}
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*kruiseappsv1alpha1.BroadcastJob)
		want   string
	}{
		{"restartPolicy Always", func(j *kruiseappsv1alpha1.BroadcastJob) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		},
			`spec.template.spec.restartPolicy: Invalid value: "Always": pod restartPolicy can only be Never or OnFailure`},
		{"a TTL with policy Never", func(j *kruiseappsv1alpha1.BroadcastJob) {
			j.Spec.CompletionPolicy = kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Never, TTLSecondsAfterFinished: ptr.To[int32](10)}
		}, "spec.completionPolicy.ttlSecondsAfterFinished: Invalid value: 10: ttlSecondsAfterFinished can just work with Always CompletionPolicyType"},
		{"a deadline with policy Never", func(j *kruiseappsv1alpha1.BroadcastJob) {
			j.Spec.CompletionPolicy = kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Never, ActiveDeadlineSeconds: ptr.To[int64](20)}
		}, "spec.completionPolicy.activeDeadlineSeconds: Invalid value: 20: activeDeadlineSeconds can just work with Always CompletionPolicyType"},
		{"a preset name label", func(j *kruiseappsv1alpha1.BroadcastJob) {
			j.Spec.Template.Labels = map[string]string{"broadcastjob-name": "x"}
		}, `spec.template.metadata.labels: Invalid value: {"broadcastjob-name":"x"}: "broadcastjob-name" and "broadcastjob-controller-uid" are not allowed to preset in pod labels`},
		{"a preset UID label", func(j *kruiseappsv1alpha1.BroadcastJob) {
			j.Spec.Template.Labels = map[string]string{"broadcastjob-controller-uid": "u"}
		}, `are not allowed to preset in pod labels`},
		{"a name with a dot", func(j *kruiseappsv1alpha1.BroadcastJob) { j.Name = "my.job" },
			`metadata.name: Invalid value: "my.job": BroadcastJob name must consist of alphanumeric characters or '-'`},
		{"a long name", func(j *kruiseappsv1alpha1.BroadcastJob) { j.Name = strings.Repeat("a", 64) }, "must be no more than 63 characters"},
		{"no containers", func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.Template.Spec.Containers = nil },
			"spec.template.spec.containers: Required value"},
		{"a container without image", func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.Template.Spec.Containers[0].Image = "" },
			"spec.template.spec.containers[0].image: Required value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := broadcastJob()
			tt.mutate(j)
			if agg := Validate(j, nil).ToAggregate(); agg == nil || !strings.Contains(agg.Error(), tt.want) {
				t.Fatalf("errors %v, want one with %q", agg, tt.want)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	for name, mutate := range map[string]func(*kruiseappsv1alpha1.BroadcastJob){
		"defaults": func(*kruiseappsv1alpha1.BroadcastJob) {},
		"OnFailure": func(j *kruiseappsv1alpha1.BroadcastJob) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		},
		"a pod deadline": func(j *kruiseappsv1alpha1.BroadcastJob) {
			j.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
		},
		"Always with a TTL": func(j *kruiseappsv1alpha1.BroadcastJob) {
			j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](0)
		},
		"Never alone":         func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.CompletionPolicy.Type = kruiseappsv1alpha1.Never },
		"an upper-case name":  func(j *kruiseappsv1alpha1.BroadcastJob) { j.Name = "Job-1" },
		"other labels":        func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.Template.Labels = map[string]string{"app": "x"} },
		"parallelism percent": func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.Parallelism = ptr.To(intstr.FromString("100%")) },
	} {
		j := broadcastJob()
		mutate(j)
		if errs := Validate(j, nil); len(errs) > 0 {
			t.Errorf("%s: rejected: %v", name, errs)
		}
	}
	if errs := Validate(nil, nil); len(errs) != 1 {
		t.Errorf("nil job: %v", errs)
	}
}

// An update keeps what the stored job got away with, and refuses what it adds.
func TestValidateUpdateRatchets(t *testing.T) {
	old := broadcastJob()
	old.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	cur := old.DeepCopy()
	cur.Spec.Paused = true
	if errs := Validate(cur, old); len(errs) > 0 {
		t.Errorf("an update of a job stored with a bad field: %v", errs)
	}
	cur.Spec.Template.Labels = map[string]string{"broadcastjob-name": "x"}
	if errs := Validate(cur, old); len(errs) != 1 {
		t.Errorf("a new bad field: %v, want one error", errs)
	}
}

// The seed's BroadcastJobs are accepted once defaulted.
func TestSeedBroadcastJobsAreAccepted(t *testing.T) {
	for _, file := range []string{"023-broadcastjob-bcj.yaml", "024-broadcastjob-bcj.yaml"} {
		raw, err := os.ReadFile(filepath.Join("../../../test/e2e/testdata/seed", file))
		if err != nil {
			t.Fatal(err)
		}
		j := &kruiseappsv1alpha1.BroadcastJob{}
		if err := yaml.UnmarshalStrict(raw, j); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		Default(j, nil)
		if errs := Validate(j, nil); len(errs) > 0 {
			t.Errorf("%s rejected: %v", file, errs)
		}
	}
}
