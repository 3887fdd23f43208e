package admission

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob/internal/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/imagepullspec"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

// Upstream's bounds for the ImageListPullJobs an AdvancedCronJob creates: at most four hours running and a day
// kept once finished.
const (
	MaxImageListPullJobDeadlineSeconds = 4 * 60 * 60
	MaxImageListPullJobTTLSeconds      = 24 * 60 * 60
)

// MaxNameLength leaves room for a dash and ten digits of Unix seconds in a child's name within the 63
// characters of a label value (kube's CronJob allows 52 for the same reason).
const MaxNameLength = 52

// namePattern is upstream's rule for AdvancedCronJob names.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9\-]+$`)

var specPath = field.NewPath("spec")

// Options are what the validation knows of the manager beyond the AdvancedCronJob.
type Options struct {
	// ImageListPullJobRefusal, when set, refuses an imageListPullJobTemplate with its message: the manager runs
	// no ImageListPullJob controller (ImagePullJobGate is off) and the ImageListPullJob webhook refuses every
	// ImageListPullJob, so no run could ever create its child.
	ImageListPullJobRefusal error
}

// Validate checks an AdvancedCronJob being created (old nil) or updated from old, after defaulting, with
// upstream's rules. On update only the schedule, timeZone, startingDeadlineSeconds, concurrencyPolicy,
// paused and the history limits may change, and errors old already had do not block the update, so that an
// AdvancedCronJob stored before a rule existed (or before ImagePullJobGate went off) can still be changed and
// deleted.
func Validate(acj, old *kruiseappsv1alpha1.AdvancedCronJob, opts Options) field.ErrorList {
	if acj == nil {
		return field.ErrorList{field.Required(specPath, "an AdvancedCronJob is required")}
	}
	if old == nil {
		return append(validateName(acj.Name), validateSpec(&acj.Spec, opts)...)
	}
	errs := rolloutadmission.Ratchet(validateSpec(&acj.Spec, opts), validateSpec(&old.Spec, opts))
	return append(errs, validateImmutable(&acj.Spec, &old.Spec)...)
}

func validateName(name string) field.ErrorList {
	p := field.NewPath("metadata", "name")
	var errs field.ErrorList
	if !namePattern.MatchString(name) {
		errs = append(errs, field.Invalid(p, name, "AdvancedCronJob name must consist of alphanumeric characters or '-'"))
	}
	if len(name) > MaxNameLength {
		errs = append(errs, field.TooLong(p, name, MaxNameLength))
	}
	return errs
}

func validateSpec(s *kruiseappsv1alpha1.AdvancedCronJobSpec, opts Options) field.ErrorList {
	errs := validateSchedule(s)
	errs = append(errs, validateTimeZone(s.TimeZone, specPath.Child("timeZone"))...)
	errs = append(errs, validateTemplate(&s.Template, specPath.Child("template"), opts)...)
	errs = append(errs, nonNegative(s.StartingDeadlineSeconds, "startingDeadlineSeconds")...)
	errs = append(errs, nonNegative(int64Of(s.SuccessfulJobsHistoryLimit), "successfulJobsHistoryLimit")...)
	return append(errs, nonNegative(int64Of(s.FailedJobsHistoryLimit), "failedJobsHistoryLimit")...)
}

func nonNegative(v *int64, name string) field.ErrorList {
	if v == nil || *v >= 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(specPath.Child(name), *v, "must be greater than or equal to 0")}
}

func int64Of(v *int32) *int64 {
	if v == nil {
		return nil
	}
	w := int64(*v)
	return &w
}

// validateSchedule requires a schedule the cron parser reads, as upstream, and a zone named once.
func validateSchedule(s *kruiseappsv1alpha1.AdvancedCronJobSpec) field.ErrorList {
	p := specPath.Child("schedule")
	if s.Schedule == "" {
		return field.ErrorList{field.Invalid(p, s.Schedule, "schedule cannot be empty, please provide valid cron schedule.")}
	}
	var errs field.ErrorList
	if _, err := cron.ParseStandard(s.Schedule); err != nil {
		errs = append(errs, field.Invalid(p, s.Schedule, err.Error()))
	}
	if plan.HasTimeZonePrefix(s.Schedule) && s.TimeZone != nil {
		errs = append(errs, field.Invalid(p, s.Schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	}
	return errs
}

// validateTimeZone requires an explicit IANA zone the manager knows.
func validateTimeZone(tz *string, p *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, *tz, "timeZone must be nil or non-empty string")}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(p, *tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(p, *tz, err.Error()))
	}
	return errs
}

// validateTemplate requires exactly one template: pods that run to completion, or an ImageListPullJob.
func validateTemplate(t *kruiseappsv1alpha1.CronJobTemplate, p *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	count := 0
	if t.JobTemplate != nil {
		count++
		errs = append(errs, podtemplate.ValidateJob(&t.JobTemplate.Spec.Template, p.Child("jobTemplate", "spec", "template"))...)
	}
	if t.BroadcastJobTemplate != nil {
		count++
		errs = append(errs, podtemplate.ValidateJob(&t.BroadcastJobTemplate.Spec.Template, p.Child("broadcastJobTemplate", "spec", "template"))...)
	}
	if t.ImageListPullJobTemplate != nil {
		count++
		errs = append(errs, validateImageListPullJobTemplate(t.ImageListPullJobTemplate, p.Child("imageListPullJobTemplate"), opts)...)
	}
	const kinds = "either JobTemplate, BroadcastJobTemplate or ImageListPullJobTemplate should be provided"
	switch {
	case count == 0:
		errs = append(errs, field.Forbidden(p, "spec must have one template, "+kinds))
	case count > 1:
		errs = append(errs, field.Forbidden(p, "spec can have only one template, "+kinds))
	}
	return errs
}

// validateImageListPullJobTemplate checks the template's spec as the ImageListPullJob webhook checks an
// ImageListPullJob, and with upstream's rules for one a schedule creates: it finishes (completionPolicy.type
// Always, which an unset type defaults to), within four hours, and goes within a day of finishing. Policy Never
// would keep every run active: a Forbid schedule would never run again, an Allow one pile them up.
func validateImageListPullJobTemplate(t *kruiseappsv1alpha1.ImageListPullJobTemplateSpec, p *field.Path, opts Options) field.ErrorList {
	if opts.ImageListPullJobRefusal != nil {
		return field.ErrorList{field.Forbidden(p, opts.ImageListPullJobRefusal.Error())}
	}
	spec := p.Child("spec")
	errs := imagepullspec.ValidateListPullJob(&t.Spec, spec)
	cp, cpPath := &t.Spec.CompletionPolicy, spec.Child("completionPolicy")
	if cp.Type == kruiseappsv1alpha1.Never {
		errs = append(errs, field.NotSupported(cpPath.Child("type"), cp.Type, []string{string(kruiseappsv1alpha1.Always)}))
	}
	if d := cp.ActiveDeadlineSeconds; d != nil && *d > MaxImageListPullJobDeadlineSeconds {
		errs = append(errs, field.Invalid(cpPath.Child("activeDeadlineSeconds"), *d,
			fmt.Sprintf("must be no more than %d (4 hours) in an AdvancedCronJob's template", MaxImageListPullJobDeadlineSeconds)))
	}
	if ttl := cp.TTLSecondsAfterFinished; ttl != nil && *ttl > MaxImageListPullJobTTLSeconds {
		errs = append(errs, field.Invalid(cpPath.Child("ttlSecondsAfterFinished"), *ttl,
			fmt.Sprintf("must be no more than %d (a day) in an AdvancedCronJob's template", MaxImageListPullJobTTLSeconds)))
	}
	return errs
}

// validateImmutable refuses changes to anything but the fields upstream lets change.
func validateImmutable(s, old *kruiseappsv1alpha1.AdvancedCronJobSpec) field.ErrorList {
	mutable := s.DeepCopy()
	mutable.Schedule, mutable.TimeZone, mutable.StartingDeadlineSeconds = old.Schedule, old.TimeZone, old.StartingDeadlineSeconds
	mutable.ConcurrencyPolicy, mutable.Paused = old.ConcurrencyPolicy, old.Paused
	mutable.SuccessfulJobsHistoryLimit, mutable.FailedJobsHistoryLimit = old.SuccessfulJobsHistoryLimit, old.FailedJobsHistoryLimit
	if equality.Semantic.DeepEqual(mutable, old) {
		return nil
	}
	return field.ErrorList{field.Forbidden(specPath, "updates to advancedcronjob spec for fields other than 'schedule', 'concurrencyPolicy', "+
		"'successfulJobsHistoryLimit', 'failedJobsHistoryLimit', 'startingDeadlineSeconds', 'timeZone' and 'paused' are forbidden")}
}
