package admission

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// pullJob is a valid ImagePullJob, defaulted, then changed.
func pullJob(change func(*kruiseappsv1alpha1.ImagePullJob)) *kruiseappsv1alpha1.ImagePullJob {
	j := &kruiseappsv1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j"},
		Spec: kruiseappsv1alpha1.ImagePullJobSpec{Image: "nginx:1.9.1"}}
	DefaultImagePullJob(j, nil)
	if change != nil {
		change(j)
	}
	return j
}

func TestDefaultImagePullJob(t *testing.T) {
	got := pullJob(nil)
	want := kruiseappsv1alpha1.ImagePullJobTemplate{
		CompletionPolicy: kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Always},
		PullPolicy:       &kruiseappsv1alpha1.PullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3)},
		ImagePullPolicy:  kruiseappsv1alpha1.PullIfNotPresent,
	}
	if diff := cmp.Diff(want, got.Spec.ImagePullJobTemplate); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	set := pullJob(func(j *kruiseappsv1alpha1.ImagePullJob) {
		j.Spec.CompletionPolicy.Type = kruiseappsv1alpha1.Never
		j.Spec.PullPolicy = &kruiseappsv1alpha1.PullPolicy{BackoffLimit: ptr.To[int32](0)}
		j.Spec.ImagePullPolicy = kruiseappsv1alpha1.PullAlways
	})
	DefaultImagePullJob(set, nil)
	if set.Spec.CompletionPolicy.Type != kruiseappsv1alpha1.Never || *set.Spec.PullPolicy.BackoffLimit != 0 ||
		*set.Spec.PullPolicy.TimeoutSeconds != 600 || set.Spec.ImagePullPolicy != kruiseappsv1alpha1.PullAlways {
		t.Errorf("set values were overwritten: %+v", set.Spec)
	}
	list := &kruiseappsv1alpha1.ImageListPullJob{}
	DefaultImageListPullJob(list, nil)
	if diff := cmp.Diff(want, list.Spec.ImagePullJobTemplate); diff != "" {
		t.Errorf("ImageListPullJob defaults (-want +got):\n%s", diff)
	}
	DefaultImagePullJob(nil, nil)
	DefaultImageListPullJob(nil, nil)
}

func TestValidateImagePullJob(t *testing.T) {
	labels := metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}
	for _, tc := range []struct {
		name   string
		change func(*kruiseappsv1alpha1.ImagePullJob)
		want   string // a substring of the error; empty when valid
	}{
		{"valid", nil, ""},
		{"by digest, with a registry and port", func(j *kruiseappsv1alpha1.ImagePullJob) {
			j.Spec.Image = "127.0.0.1:5000/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		}, ""},
		{"no image", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.Image = "" }, "spec.image: Required value"},
		{"a bad image", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.Image = "Nginx:1" }, `spec.image: Invalid value: "Nginx:1": not an image reference`},
		{"names and labels", func(j *kruiseappsv1alpha1.ImagePullJob) {
			j.Spec.Selector = &kruiseappsv1alpha1.ImagePullJobNodeSelector{Names: []string{"node-1"}, LabelSelector: labels}
		}, "spec.selector: Invalid value"},
		{"a bad node name", func(j *kruiseappsv1alpha1.ImagePullJob) {
			j.Spec.Selector = &kruiseappsv1alpha1.ImagePullJobNodeSelector{Names: []string{"Node_1"}}
		}, "spec.selector.names[0]"},
		{"a bad label selector", func(j *kruiseappsv1alpha1.ImagePullJob) {
			j.Spec.Selector = &kruiseappsv1alpha1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Near"}}}}
		}, "spec.selector.matchExpressions[0].operator"},
		{"selector and podSelector", func(j *kruiseappsv1alpha1.ImagePullJob) {
			j.Spec.Selector = &kruiseappsv1alpha1.ImagePullJobNodeSelector{LabelSelector: labels}
			j.Spec.PodSelector = &kruiseappsv1alpha1.ImagePullJobPodSelector{LabelSelector: labels}
		}, "spec.podSelector: Forbidden: can not set both spec.selector and spec.podSelector"},
		{"negative parallelism", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(-1)) },
			"spec.parallelism: Invalid value: -1"},
		{"a percentage", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromString("50%")) },
			`spec.parallelism: Invalid value: "50%": must be a whole number`},
		{"parallelism 0 pauses", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromString("0")) }, ""},
		{"timeout 0", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.PullPolicy.TimeoutSeconds = ptr.To[int32](0) },
			"spec.pullPolicy.timeoutSeconds: Invalid value: 0"},
		{"negative backoff", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.PullPolicy.BackoffLimit = ptr.To[int32](-1) },
			"spec.pullPolicy.backoffLimit: Invalid value: -1"},
		{"Never with a deadline", func(j *kruiseappsv1alpha1.ImagePullJob) {
			j.Spec.CompletionPolicy = kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Never, ActiveDeadlineSeconds: ptr.To[int64](60)}
		}, "spec.completionPolicy.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds and ttlSecondsAfterFinished can only work with Always"},
		{"Never with a TTL", func(j *kruiseappsv1alpha1.ImagePullJob) {
			j.Spec.CompletionPolicy = kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Never, TTLSecondsAfterFinished: ptr.To[int32](60)}
		}, "spec.completionPolicy.ttlSecondsAfterFinished: Forbidden"},
		{"an unknown type", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.CompletionPolicy.Type = "Sometimes" },
			`spec.completionPolicy.type: Unsupported value: "Sometimes"`},
		{"deadline 0", func(j *kruiseappsv1alpha1.ImagePullJob) {
			j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](0)
		},
			"spec.completionPolicy.activeDeadlineSeconds: Invalid value: 0"},
		{"a bad secret name", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.PullSecrets = []string{"ok", "Not OK"} },
			`spec.pullSecrets[1]: Invalid value: "Not OK"`},
		{"a bad pull policy", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.ImagePullPolicy = "Never" },
			`spec.imagePullPolicy: Unsupported value: "Never"`},
	} {
		errs := ValidateImagePullJob(pullJob(tc.change), nil)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s: refused: %v", tc.name, errs)
		case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
			t.Errorf("%s: errors %v, want one containing %q", tc.name, errs, tc.want)
		}
	}
}

func TestValidateRatchetsOnUpdate(t *testing.T) {
	bad := pullJob(func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(-1)) })
	if errs := ValidateImagePullJob(bad, bad.DeepCopy()); len(errs) > 0 {
		t.Errorf("an update of a job stored with the error refused: %v", errs)
	}
	if errs := ValidateImagePullJob(bad, pullJob(nil)); len(errs) == 0 {
		t.Error("an update introducing the error accepted")
	}
	if errs := ValidateImagePullJob(nil, nil); len(errs) == 0 {
		t.Error("nil accepted")
	}
}

func TestValidateImageListPullJob(t *testing.T) {
	list := func(images ...string) *kruiseappsv1alpha1.ImageListPullJob {
		j := &kruiseappsv1alpha1.ImageListPullJob{Spec: kruiseappsv1alpha1.ImageListPullJobSpec{Images: images}}
		DefaultImageListPullJob(j, nil)
		return j
	}
	if errs := ValidateImageListPullJob(list("nginx:1", "redis:7"), nil); len(errs) > 0 {
		t.Errorf("valid list refused: %v", errs)
	}
	for images, want := range map[string]string{
		"":                "spec.images: Required value",
		"nginx:1,,x":      "spec.images[1]: Required value",
		"nginx:1,BAD":     `spec.images[1]: Invalid value: "BAD"`,
		"nginx:1,nginx:1": `spec.images[1]: Duplicate value: "nginx:1"`,
	} {
		var in []string
		if images != "" {
			in = strings.Split(images, ",")
		}
		if errs := ValidateImageListPullJob(list(in...), nil); !strings.Contains(errs.ToAggregate().Error(), want) {
			t.Errorf("images %q: errors %v, want %q", images, errs, want)
		}
	}
	never := list("nginx:1")
	never.Spec.CompletionPolicy = kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Never, TTLSecondsAfterFinished: ptr.To[int32](1)}
	if errs := ValidateImageListPullJob(never, nil); !strings.Contains(errs.ToAggregate().Error(), "spec.completionPolicy.ttlSecondsAfterFinished") {
		t.Errorf("template rules not checked: %v", errs)
	}
}
