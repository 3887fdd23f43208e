package admission

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var updateTypes = []string{
	string(kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType),
	string(kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType),
	string(kruiseappsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType),
	string(kruiseappsv1alpha1.OnDeleteCloneSetUpdateStrategyType),
}

// noPercentLimit marks a percentage that may exceed 100% (maxSurge, as for Deployments).
const noPercentLimit = -1

// maxPercentDigits bounds the digits read from a percentage, so the scaled value cannot overflow.
const maxPercentDigits = 9

var (
	defaultPartition      = intstr.FromInt32(0)
	defaultMaxUnavailable = intstr.FromString(kruiseappsv1alpha1.DefaultCloneSetMaxUnavailable)
	defaultMaxSurge       = intstr.FromInt32(0)
)

func validateUpdateStrategy(u *kruiseappsv1alpha1.CloneSetUpdateStrategy, replicas int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !slices.Contains(updateTypes, string(u.Type)) {
		errs = append(errs, field.NotSupported(p.Child("type"), u.Type, updateTypes))
	}
	_, partitionErrs := scaledValue(u.Partition, defaultPartition, replicas, 100, p.Child("partition"))
	maxUnavailable, unavailableErrs := scaledValue(u.MaxUnavailable, defaultMaxUnavailable, replicas, 100, p.Child("maxUnavailable"))
	maxSurge, surgeErrs := scaledValue(u.MaxSurge, defaultMaxSurge, replicas, noPercentLimit, p.Child("maxSurge"))
	errs = append(append(append(errs, partitionErrs...), unavailableErrs...), surgeErrs...)
	if u.Type == kruiseappsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType && maxSurge > 0 {
		errs = append(errs, field.Invalid(p.Child("maxSurge"), u.MaxSurge.String(), "can not use maxSurge with strategy type InPlaceOnly"))
	}
	// Neither surging nor taking a pod down, an update could never progress.
	if replicas > 0 && maxUnavailable < 1 && maxSurge < 1 && len(unavailableErrs)+len(surgeErrs) == 0 {
		errs = append(errs, field.Invalid(p.Child("maxUnavailable"), intOrDefault(u.MaxUnavailable, defaultMaxUnavailable).String(),
			"maxUnavailable and maxSurge should not both be less than 1"))
	}
	if err := u.PriorityStrategy.Validate(); err != nil {
		errs = append(errs, field.Invalid(p.Child("priorityStrategy"), field.OmitValueType{}, err.Error()))
	}
	if err := u.ScatterStrategy.Validate(); err != nil {
		errs = append(errs, field.Invalid(p.Child("scatterStrategy"), field.OmitValueType{}, err.Error()))
	}
	return errs
}

func validateScaleStrategy(s *kruiseappsv1alpha1.CloneSetScaleStrategy, p *field.Path) field.ErrorList {
	if s.MaxUnavailable == nil {
		return nil
	}
	_, errs := scaledValue(s.MaxUnavailable, defaultMaxSurge, 0, 100, p.Child("maxUnavailable"))
	return errs
}

func intOrDefault(v *intstr.IntOrString, def intstr.IntOrString) *intstr.IntOrString {
	if v == nil {
		return &def
	}
	return v
}

// scaledValue checks an integer or percentage (unset read as def) and returns it scaled against total,
// percentages rounded up as upstream's webhook does. An integer must not be negative; a string must be a
// percentage ("5" is refused: the controller could not read it), at most maxPercent unless noPercentLimit.
func scaledValue(v *intstr.IntOrString, def intstr.IntOrString, total int32, maxPercent int64, p *field.Path) (int64, field.ErrorList) {
	v = intOrDefault(v, def)
	switch v.Type {
	case intstr.Int:
		if v.IntVal < 0 {
			return 0, field.ErrorList{field.Invalid(p, v.IntVal, "must be greater than or equal to 0")}
		}
		return int64(v.IntVal), nil
	case intstr.String:
		return scaledPercent(v.StrVal, total, maxPercent, p)
	default:
		return 0, field.ErrorList{field.Invalid(p, v.String(), "must be an integer or a percentage")}
	}
}

func scaledPercent(s string, total int32, maxPercent int64, p *field.Path) (int64, field.ErrorList) {
	digits, ok := strings.CutSuffix(s, "%")
	if !ok || digits == "" || len(digits) > maxPercentDigits || !allDigits(digits) {
		return 0, field.ErrorList{field.Invalid(p, s, `must be an integer or a percentage like "20%"`)}
	}
	percent := parseDigits(digits)
	if maxPercent != noPercentLimit && percent > maxPercent {
		return 0, field.ErrorList{field.Invalid(p, s, "must not be greater than 100%")}
	}
	// Rounded up, as upstream's webhook scales all three values.
	return (percent*int64(total) + 99) / 100, nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// parseDigits reads a string of at most maxPercentDigits decimal digits.
func parseDigits(s string) int64 {
	var n int64
	for _, r := range s {
		n = n*10 + int64(r-'0')
	}
	return n
}
