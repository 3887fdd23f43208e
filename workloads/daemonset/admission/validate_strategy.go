package admission

import (
	"strconv"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/intorpercent"
)

var (
	strategyTypes = []string{string(kruiseappsv1alpha1.RollingUpdateDaemonSetStrategyType), string(kruiseappsv1alpha1.OnDeleteDaemonSetStrategyType)}
	rollingTypes  = []string{string(kruiseappsv1alpha1.StandardRollingUpdateType), string(kruiseappsv1alpha1.DeprecatedSurgingRollingUpdateType),
		string(kruiseappsv1alpha1.InplaceRollingUpdateType)}
)

func validateUpdateStrategy(u *kruiseappsv1alpha1.DaemonSetUpdateStrategy, p *field.Path) field.ErrorList {
	switch u.Type {
	case kruiseappsv1alpha1.OnDeleteDaemonSetStrategyType:
		return nil
	case kruiseappsv1alpha1.RollingUpdateDaemonSetStrategyType:
		if u.RollingUpdate == nil {
			return field.ErrorList{field.Required(p.Child("rollingUpdate"), "")}
		}
		return validateRollingUpdate(u.RollingUpdate, p.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(p.Child("type"), u.Type, strategyTypes)}
	}
}

// validateRollingUpdate: exactly one of maxUnavailable and maxSurge is set (a positive number or a
// percentage up to 100%), an in-place update cannot surge, a deprecated Surging one cannot take nodes down.
func validateRollingUpdate(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet, p *field.Path) field.ErrorList {
	unavailable, errs := checkCount(ru.MaxUnavailable, p.Child("maxUnavailable"))
	surge, surgeErrs := checkCount(ru.MaxSurge, p.Child("maxSurge"))
	errs = append(errs, surgeErrs...)
	switch {
	case unavailable && surge:
		errs = append(errs, field.Invalid(p.Child("maxSurge"), ru.MaxSurge.String(), "may not be set when maxUnavailable is non-zero"))
	case !unavailable && !surge:
		errs = append(errs, field.Required(p.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
	}
	switch ru.Type {
	case "", kruiseappsv1alpha1.StandardRollingUpdateType:
	case kruiseappsv1alpha1.InplaceRollingUpdateType:
		if surge {
			errs = append(errs, field.Required(p.Child("maxSurge"), "must be 0 for InPlaceIfPossible type"))
		}
	case kruiseappsv1alpha1.DeprecatedSurgingRollingUpdateType:
		if unavailable {
			errs = append(errs, field.Required(p.Child("maxUnavailable"), "must be 0 for Surging type"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("rollingUpdateType"), ru.Type, rollingTypes))
	}
	return append(errs, checkPartition(ru.Partition, p.Child("partition"))...)
}

// checkCount checks a maxUnavailable or maxSurge: set says it is not 0. A non-zero value must be a
// non-negative integer or a percentage of at most 100%.
func checkCount(v *intstr.IntOrString, p *field.Path) (set bool, errs field.ErrorList) {
	if v == nil || intOrPercent(*v) == 0 {
		return false, nil
	}
	return true, intorpercent.Validate(*v, p)
}

// checkPartition: a partition is a non-negative integer or a percentage of at most 100%.
func checkPartition(v *intstr.IntOrString, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	return intorpercent.Validate(*v, p)
}

// intOrPercent is the number a value names, as upstream reads it to tell whether it is set: a percentage's
// number, a string's number, or 0.
func intOrPercent(v intstr.IntOrString) int {
	if v.Type == intstr.Int {
		return int(v.IntVal)
	}
	if n, ok := intorpercent.Percent(v.StrVal); ok {
		return n
	}
	n, _ := strconv.Atoi(v.StrVal)
	return n
}
