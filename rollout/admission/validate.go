package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// ValidateRollout checks a v1beta1 Rollout being created. others are the Rollouts of its namespace (it may
// be among them); at most one Rollout may reference a workload.
func ValidateRollout(r *rolloutsv1beta1.Rollout, others []rolloutsv1beta1.Rollout, opts Options) field.ErrorList {
	if r == nil {
		return field.ErrorList{field.Required(field.NewPath("spec"), "a Rollout is required")}
	}
	return validateHub(r, others, opts, v1beta1Naming)
}

// ValidateRolloutUpdate checks an update of a v1beta1 Rollout from old (the stored object, whose status
// carries the live phase) to r. Errors old already had do not block the update, so that a Rollout stored
// before a rule existed can still be updated (finalizers, status-independent edits) and deleted. While the
// live phase is Progressing or Terminating the workloadRef, trafficRoutings, rolling style and number of
// steps are immutable.
func ValidateRolloutUpdate(old, r *rolloutsv1beta1.Rollout, others []rolloutsv1beta1.Rollout, opts Options) field.ErrorList {
	if old == nil {
		return ValidateRollout(r, others, opts)
	}
	errs := Ratchet(ValidateRollout(r, others, opts), ValidateRollout(old, others, opts))
	if r == nil {
		return errs
	}
	return append(errs, validateImmutable(old, r, v1beta1Naming)...)
}

// ValidateV1alpha1Rollout checks a v1alpha1 Rollout being created: its own rules (rolling-style annotation,
// weight or replicas in every step), then the common rules on its v1beta1 form, reported with v1alpha1
// field names.
func ValidateV1alpha1Rollout(r *rolloutsv1alpha1.Rollout, others []rolloutsv1beta1.Rollout, opts Options) field.ErrorList {
	hub, names, err := toHub(r)
	if err != nil {
		return field.ErrorList{err}
	}
	errs := validateRollingStyleAnnotation(r.Annotations)
	return append(errs, validateHub(hub, others, opts, names)...)
}

// ValidateV1alpha1RolloutUpdate is ValidateRolloutUpdate for v1alpha1; the rolling-style annotation stands
// for the rolling style.
func ValidateV1alpha1RolloutUpdate(old, r *rolloutsv1alpha1.Rollout, others []rolloutsv1beta1.Rollout, opts Options) field.ErrorList {
	if old == nil {
		return ValidateV1alpha1Rollout(r, others, opts)
	}
	errs := Ratchet(ValidateV1alpha1Rollout(r, others, opts), ValidateV1alpha1Rollout(old, others, opts))
	oldHub, _, oldErr := toHub(old)
	hub, names, err := toHub(r)
	if oldErr != nil || err != nil {
		return errs
	}
	return append(errs, validateImmutable(oldHub, hub, names)...)
}

func toHub(r *rolloutsv1alpha1.Rollout) (*rolloutsv1beta1.Rollout, naming, *field.Error) {
	if r == nil {
		return nil, naming{}, field.Required(field.NewPath("spec"), "a Rollout is required")
	}
	hub := &rolloutsv1beta1.Rollout{}
	if err := rolloutsv1alpha1.ConvertRolloutToV1beta1(r, hub); err != nil {
		return nil, naming{}, field.InternalError(field.NewPath("spec"), fmt.Errorf("converting to v1beta1: %w", err))
	}
	return hub, v1alpha1Naming(r), nil
}

// validateHub runs every rule that does not compare with a previous version.
func validateHub(r *rolloutsv1beta1.Rollout, others []rolloutsv1beta1.Rollout, opts Options, names naming) field.ErrorList {
	refErrs := validateWorkloadRef(r, opts, names)
	errs := append(refErrs, validateStrategy(r, opts, names, len(refErrs) == 0)...)
	return append(errs, conflicts(r, others, names.workloadRef)...)
}

// Ratchet drops the errors of current that old already had, so that an update is refused only for what it
// breaks, not for what an older release of the rules let in.
func Ratchet(current, old field.ErrorList) field.ErrorList {
	seen := make(map[string]bool, len(old))
	for _, e := range old {
		seen[e.Error()] = true
	}
	var out field.ErrorList
	for _, e := range current {
		if !seen[e.Error()] {
			out = append(out, e)
		}
	}
	return out
}
