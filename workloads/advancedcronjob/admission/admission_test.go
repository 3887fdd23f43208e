package admission

import (
	"errors"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "counter", Image: "busybox:latest"}}}}
}

// valid is a defaulted AdvancedCronJob with a job template; broadcast gives it a BroadcastJob template.
func valid(broadcast bool, mutate ...func(*kruiseappsv1alpha1.AdvancedCronJob)) *kruiseappsv1alpha1.AdvancedCronJob {
	acj := &kruiseappsv1alpha1.AdvancedCronJob{ObjectMeta: metav1.ObjectMeta{Name: "acj", Namespace: "ns"},
		Spec: kruiseappsv1alpha1.AdvancedCronJobSpec{Schedule: "*/1 * * * *"}}
	if broadcast {
		acj.Spec.Template.BroadcastJobTemplate = &kruiseappsv1alpha1.BroadcastJobTemplateSpec{Spec: kruiseappsv1alpha1.BroadcastJobSpec{Template: podTemplate()}}
	} else {
		acj.Spec.Template.JobTemplate = &batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: podTemplate()}}
	}
	for _, m := range mutate {
		m(acj)
	}
	Default(acj, nil)
	return acj
}

// withImageList replaces the template with an ImageListPullJob's, as a user writes it: no completion policy type.
func withImageList(a *kruiseappsv1alpha1.AdvancedCronJob) {
	a.Spec.Template.JobTemplate, a.Spec.Template.BroadcastJobTemplate = nil, nil
	a.Spec.Template.ImageListPullJobTemplate = &kruiseappsv1alpha1.ImageListPullJobTemplateSpec{
		Spec: kruiseappsv1alpha1.ImageListPullJobSpec{Images: []string{"nginx:1.25", "redis:7.0"}}}
}

// pulls is the ImageListPullJob template's spec.
func pulls(a *kruiseappsv1alpha1.AdvancedCronJob) *kruiseappsv1alpha1.ImageListPullJobSpec {
	return &a.Spec.Template.ImageListPullJobTemplate.Spec
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		acj    *kruiseappsv1alpha1.AdvancedCronJob
		errors []string
	}{
		{name: "the seed's, with a BroadcastJob template", acj: valid(true)},
		{name: "a job template, @every, a zone, a deadline", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			a.Spec.Schedule, a.Spec.TimeZone, a.Spec.StartingDeadlineSeconds = "@every 10s", ptr.To("Asia/Shanghai"), ptr.To[int64](30)
		})},
		{name: "a TZ prefix alone", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) { a.Spec.Schedule = "TZ=UTC 0 * * * *" })},
		{name: "52 characters", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) { a.Name = strings.Repeat("a", 52) })},
		{name: "53 characters leave no room for the run's seconds", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) { a.Name = strings.Repeat("a", 53) }),
			errors: []string{"metadata.name: Too long: may not be more than 52 bytes"}},
		{name: "upstream's name pattern", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) { a.Name = "nightly.report" }),
			errors: []string{`metadata.name: Invalid value: "nightly.report": AdvancedCronJob name must consist of alphanumeric characters or '-'`}},
		{name: "an empty schedule", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) { a.Spec.Schedule = "" }),
			errors: []string{`spec.schedule: Invalid value: "": schedule cannot be empty, please provide valid cron schedule.`}},
		{name: "six fields", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) { a.Spec.Schedule = "0 * * * * *" }),
			errors: []string{`spec.schedule: Invalid value: "0 * * * * *": expected exactly 5 fields, found 6: [0 * * * * *]`}},
		{name: "two zones", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			a.Spec.Schedule, a.Spec.TimeZone = "TZ=UTC 0 * * * *", ptr.To("Asia/Shanghai")
		}), errors: []string{`spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use both timeZone field and TZ or CRON_TZ in schedule`}},
		{name: "an unknown zone", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) { a.Spec.TimeZone = ptr.To("Mars/Olympus") }),
			errors: []string{`spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`}},
		{name: "Local is not a zone name", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) { a.Spec.TimeZone = ptr.To("local") }),
			errors: []string{`spec.timeZone: Invalid value: "local": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones`,
				`spec.timeZone: Invalid value: "local": unknown time zone local`}},
		{name: "an empty zone", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) { a.Spec.TimeZone = ptr.To("") }),
			errors: []string{`spec.timeZone: Invalid value: "": timeZone must be nil or non-empty string`}},
		{name: "negative numbers", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			a.Spec.StartingDeadlineSeconds, a.Spec.SuccessfulJobsHistoryLimit, a.Spec.FailedJobsHistoryLimit = ptr.To[int64](-1), ptr.To[int32](-1), ptr.To[int32](-2)
		}), errors: []string{"spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
			"spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
			"spec.failedJobsHistoryLimit: Invalid value: -2: must be greater than or equal to 0"}},
		{name: "no template", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) { a.Spec.Template.JobTemplate = nil }),
			errors: []string{"spec.template: Forbidden: spec must have one template, either JobTemplate, BroadcastJobTemplate or ImageListPullJobTemplate should be provided"}},
		{name: "two templates", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			a.Spec.Template.BroadcastJobTemplate = valid(true).Spec.Template.BroadcastJobTemplate
		}), errors: []string{"spec.template: Forbidden: spec can have only one template, either JobTemplate, BroadcastJobTemplate or ImageListPullJobTemplate should be provided"}},
		{name: "a job's pods must finish", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			a.Spec.Template.JobTemplate.Spec.Template.Spec.RestartPolicy = ""
		}), errors: []string{`spec.template.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`}},
		{name: "a BroadcastJob's too", acj: valid(true, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			a.Spec.Template.BroadcastJobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}), errors: []string{`spec.template.broadcastJobTemplate.spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`}},
		{name: "a container without an image", acj: valid(true, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			a.Spec.Template.BroadcastJobTemplate.Spec.Template.Spec.Containers[0].Image = ""
		}), errors: []string{"spec.template.broadcastJobTemplate.spec.template.spec.containers[0].image: Required value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range Validate(tc.acj, nil, Options{}) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.errors, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.errors, "\n"))
			}
		})
	}
}

func TestValidateImageListPullJobTemplate(t *testing.T) {
	const p = "spec.template.imageListPullJobTemplate"
	tests := []struct {
		name   string
		acj    *kruiseappsv1alpha1.AdvancedCronJob
		opts   Options
		errors []string
	}{
		{name: "images alone: the type defaults to Always when the job is created", acj: valid(false, withImageList)},
		{name: "Always, four hours, kept a day", acj: valid(false, withImageList, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			cp := &pulls(a).CompletionPolicy
			cp.Type, cp.ActiveDeadlineSeconds, cp.TTLSecondsAfterFinished = kruiseappsv1alpha1.Always, ptr.To[int64](14400), ptr.To[int32](86400)
			pulls(a).Parallelism, pulls(a).PodSelector = ptr.To(intstr.FromInt32(5)), &kruiseappsv1alpha1.ImagePullJobPodSelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		})},
		{name: "with a job template too", acj: valid(false, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			a.Spec.Template.ImageListPullJobTemplate = valid(false, withImageList).Spec.Template.ImageListPullJobTemplate
		}), errors: []string{"spec.template: Forbidden: spec can have only one template, either JobTemplate, BroadcastJobTemplate or ImageListPullJobTemplate should be provided"}},
		{name: "no image", acj: valid(false, withImageList, func(a *kruiseappsv1alpha1.AdvancedCronJob) { pulls(a).Images = nil }),
			errors: []string{p + ".spec.images: Required value: at least one image to pull"}},
		{name: "an image twice, one that does not parse", acj: valid(false, withImageList, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			pulls(a).Images = []string{"nginx:1.25", "nginx:1.25", "Redis:7"}
		}), errors: []string{p + `.spec.images[1]: Duplicate value: "nginx:1.25"`,
			p + `.spec.images[2]: Invalid value: "Redis:7": not an image reference the node agent can pull: invalid image reference "Redis:7": ` +
				"could not parse reference: Redis:7"}},
		{name: "the ImageListPullJob's rules: nodes chosen one way", acj: valid(false, withImageList, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			labels := metav1.LabelSelector{MatchLabels: map[string]string{"pool": "web"}}
			pulls(a).Selector = &kruiseappsv1alpha1.ImagePullJobNodeSelector{LabelSelector: labels}
			pulls(a).PodSelector = &kruiseappsv1alpha1.ImagePullJobPodSelector{LabelSelector: labels}
		}), errors: []string{p + ".spec.podSelector: Forbidden: can not set both spec.selector and spec.podSelector"}},
		{name: "Never would keep every run active", acj: valid(false, withImageList, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			pulls(a).CompletionPolicy.Type = kruiseappsv1alpha1.Never
		}), errors: []string{p + `.spec.completionPolicy.type: Unsupported value: "Never": supported values: "Always"`}},
		{name: "an unknown type is the ImageListPullJob's error", acj: valid(false, withImageList, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			pulls(a).CompletionPolicy.Type = "Sometimes"
		}), errors: []string{p + `.spec.completionPolicy.type: Unsupported value: "Sometimes": supported values: "Always", "Never"`}},
		{name: "more than four hours", acj: valid(false, withImageList, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			pulls(a).CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](14401)
		}), errors: []string{p + ".spec.completionPolicy.activeDeadlineSeconds: Invalid value: 14401: must be no more than 14400 (4 hours) in an AdvancedCronJob's template"}},
		{name: "kept more than a day", acj: valid(false, withImageList, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			pulls(a).CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](86401)
		}), errors: []string{p + ".spec.completionPolicy.ttlSecondsAfterFinished: Invalid value: 86401: must be no more than 86400 (a day) in an AdvancedCronJob's template"}},
		{name: "no ImageListPullJob controller", acj: valid(false, withImageList), opts: Options{ImageListPullJobRefusal: errGateOff},
			errors: []string{p + ": Forbidden: feature-gate ImagePullJobGate is not enabled"}},
		{name: "the other templates do not need it", acj: valid(true), opts: Options{ImageListPullJobRefusal: errGateOff}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range Validate(tc.acj, nil, tc.opts) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.errors, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.errors, "\n"))
			}
		})
	}
}

var errGateOff = errors.New("feature-gate ImagePullJobGate is not enabled")

// An AdvancedCronJob stored while the gate was on can still be paused, or have its schedule changed, once it is
// off; its template still cannot change.
func TestValidateUpdateOnceTheGateIsOff(t *testing.T) {
	old := valid(false, withImageList)
	off := Options{ImageListPullJobRefusal: errGateOff}
	paused := old.DeepCopy()
	paused.Spec.Paused, paused.Spec.Schedule = ptr.To(true), "@daily"
	if errs := Validate(paused, old, off); len(errs) > 0 {
		t.Errorf("pausing refused: %v", errs)
	}
	changed := old.DeepCopy()
	pulls(changed).Images = append(pulls(changed).Images, "busybox:1.36")
	if errs := Validate(changed, old, Options{}); errs.ToAggregate() == nil || !strings.Contains(errs.ToAggregate().Error(), "spec: Forbidden: updates to advancedcronjob spec") {
		t.Errorf("a changed image list: %v", errs)
	}
}

func TestValidateUpdate(t *testing.T) {
	old := valid(false)
	tests := []struct {
		name   string
		change func(*kruiseappsv1alpha1.AdvancedCronJob)
		errors string
	}{
		{name: "the schedule and its settings may change", change: func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			s := &a.Spec
			s.Schedule, s.TimeZone, s.StartingDeadlineSeconds, s.ConcurrencyPolicy = "@hourly", ptr.To("UTC"), ptr.To[int64](10), kruiseappsv1alpha1.ForbidConcurrent
			s.Paused, s.SuccessfulJobsHistoryLimit, s.FailedJobsHistoryLimit = ptr.To(true), ptr.To[int32](0), ptr.To[int32](0)
		}},
		{name: "the template may not", change: func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			a.Spec.Template.JobTemplate.Spec.Template.Spec.Containers[0].Image = "busybox:1.36"
		}, errors: "spec: Forbidden: updates to advancedcronjob spec for fields other than 'schedule', 'concurrencyPolicy', " +
			"'successfulJobsHistoryLimit', 'failedJobsHistoryLimit', 'startingDeadlineSeconds', 'timeZone' and 'paused' are forbidden"},
		{name: "a name too long stored before the rule still updates", change: func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			a.Name = strings.Repeat("a", 60)
			a.Spec.Paused = ptr.To(true)
		}},
		{name: "a new error blocks the update", change: func(a *kruiseappsv1alpha1.AdvancedCronJob) { a.Spec.Schedule = "never" },
			errors: `spec.schedule: Invalid value: "never": expected exactly 5 fields, found 1: [never]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur := old.DeepCopy()
			tc.change(cur)
			if got := Validate(cur, old, Options{}).ToAggregate(); (got == nil && tc.errors != "") || (got != nil && got.Error() != tc.errors) {
				t.Errorf("errors %v, want %q", got, tc.errors)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	acj := valid(false)
	s := acj.Spec
	if s.ConcurrencyPolicy != kruiseappsv1alpha1.AllowConcurrent || *s.Paused || *s.SuccessfulJobsHistoryLimit != 3 || *s.FailedJobsHistoryLimit != 1 {
		t.Errorf("spec defaults %+v", s)
	}
	pod := s.Template.JobTemplate.Spec.Template.Spec
	if pod.DNSPolicy != corev1.DNSClusterFirst || pod.Containers[0].ImagePullPolicy != corev1.PullAlways || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("pod template defaults %+v", pod)
	}
	again := acj.DeepCopy()
	Default(again, acj)
	if !equality.Semantic.DeepEqual(again, acj) {
		t.Error("defaulting twice changes the AdvancedCronJob")
	}
	// An update that leaves the template alone never defaults it: one stored without defaults stays so.
	stored := acj.DeepCopy()
	stored.Spec.Template.JobTemplate.Spec.Template.Spec.DNSPolicy = ""
	update := stored.DeepCopy()
	update.Spec.Paused = ptr.To(true)
	Default(update, stored)
	if update.Spec.Template.JobTemplate.Spec.Template.Spec.DNSPolicy != "" {
		t.Error("an update without a template change defaulted the template")
	}
	// An ImageListPullJob template stays as written: the ImageListPullJob webhook defaults each run's job.
	if list := valid(false, withImageList); pulls(list).CompletionPolicy.Type != "" || pulls(list).PullPolicy != nil || pulls(list).ImagePullPolicy != "" {
		t.Errorf("the ImageListPullJob template was defaulted: %+v", pulls(list))
	}
	Default(nil, nil)
}
