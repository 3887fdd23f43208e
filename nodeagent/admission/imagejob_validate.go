package admission

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/imagepullspec"
)

// ValidateImagePullJob checks an ImagePullJob being created (old nil) or updated from old, after defaulting,
// with upstream's rules: an image reference the node agent can pull, nodes chosen one way at most, and a
// completion policy of Never without a deadline or TTL; and with the rules the controller relies on
// (parallelism, the pull policy, the selectors and secret names). On update, errors old already had do not
// block the update, so that a job stored before a rule existed can still be changed and deleted.
func ValidateImagePullJob(job, old *kruiseappsv1alpha1.ImagePullJob) field.ErrorList {
	if job == nil {
		return field.ErrorList{field.Required(specPath, "an ImagePullJob is required")}
	}
	errs := imagepullspec.ValidatePullJob(&job.Spec, specPath)
	if old != nil {
		errs = rolloutadmission.Ratchet(errs, imagepullspec.ValidatePullJob(&old.Spec, specPath))
	}
	return errs
}

// ValidateImageListPullJob checks an ImageListPullJob as ValidateImagePullJob checks each of its ImagePullJobs,
// and that it lists images, each once.
func ValidateImageListPullJob(job, old *kruiseappsv1alpha1.ImageListPullJob) field.ErrorList {
	if job == nil {
		return field.ErrorList{field.Required(specPath, "an ImageListPullJob is required")}
	}
	errs := imagepullspec.ValidateListPullJob(&job.Spec, specPath)
	if old != nil {
		errs = rolloutadmission.Ratchet(errs, imagepullspec.ValidateListPullJob(&old.Spec, specPath))
	}
	return errs
}
