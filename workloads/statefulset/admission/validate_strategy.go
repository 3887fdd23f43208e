package admission

import (
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

const parallelOnly = "can only work with Parallel PodManagementPolicyType"

var (
	percentRegexp = regexp.MustCompile(`^[0-9]+%$`)
	rangeRegexp   = regexp.MustCompile(`^\d+-\d+$`)
)

// validateReserveOrdinals accepts non-negative numbers and ranges "a-b" with a <= b.
func validateReserveOrdinals(list []intstr.IntOrString, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, item := range list {
		ip := p.Index(i)
		switch {
		case item.Type == intstr.Int && item.IntVal < 0:
			errs = append(errs, field.Invalid(ip, item.IntVal, "must be greater than or equal to 0"))
		case item.Type == intstr.String && !rangeRegexp.MatchString(item.StrVal):
			errs = append(errs, field.Invalid(ip, item.StrVal, `must be a number or a range like "3-5"`))
		case item.Type == intstr.String:
			if _, _, err := plan.ParseRange(item.StrVal); err != nil {
				errs = append(errs, field.Invalid(ip, item.StrVal, err.Error()))
			}
		}
	}
	return errs
}

func validateScaleStrategy(s *kruiseappsv1beta1.StatefulSetSpec) field.ErrorList {
	if s.ScaleStrategy == nil || s.ScaleStrategy.MaxUnavailable == nil {
		return nil
	}
	return validateMaxUnavailable(s.ScaleStrategy.MaxUnavailable, s, specPath.Child("scaleStrategy", "maxUnavailable"))
}

// validateMaxUnavailable requires at least 1 (a positive number, or a percentage that is not 0%), and
// anything but the number 1 only with the Parallel policy, as upstream.
func validateMaxUnavailable(v *intstr.IntOrString, s *kruiseappsv1beta1.StatefulSetSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case v.Type == intstr.String && !percentRegexp.MatchString(v.StrVal):
		errs = append(errs, field.Invalid(p, v.StrVal, `must be an integer or a percentage like "20%"`))
	case v.Type == intstr.Int && v.IntVal < 1, v.Type == intstr.String && zeroPercent(v.StrVal):
		errs = append(errs, field.Invalid(p, v.String(), "should not be less than 1"))
	}
	if s.PodManagementPolicy != appsv1.ParallelPodManagement && (v.Type != intstr.Int || v.IntVal != 1) {
		errs = append(errs, field.Invalid(p, v.String(), parallelOnly))
	}
	return errs
}

// zeroPercent reports whether a percentage is 0%, whatever its zeros.
func zeroPercent(s string) bool {
	return strings.Trim(strings.TrimSuffix(s, "%"), "0") == ""
}

func validateUpdateStrategy(s *kruiseappsv1beta1.StatefulSetSpec) field.ErrorList {
	p := specPath.Child("updateStrategy")
	switch s.UpdateStrategy.Type {
	case "", appsv1.RollingUpdateStatefulSetStrategyType:
		return validateRollingUpdate(s, p.Child("rollingUpdate"))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.UpdateStrategy.RollingUpdate != nil {
			return field.ErrorList{field.Invalid(p.Child("rollingUpdate"), field.OmitValueType{},
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType))}
		}
		return nil
	}
	return field.ErrorList{field.NotSupported(p.Child("type"), s.UpdateStrategy.Type,
		[]string{string(appsv1.RollingUpdateStatefulSetStrategyType), string(appsv1.OnDeleteStatefulSetStrategyType)})}
}

func validateRollingUpdate(s *kruiseappsv1beta1.StatefulSetSpec, p *field.Path) field.ErrorList {
	ru := s.UpdateStrategy.RollingUpdate
	if ru == nil {
		return nil
	}
	var errs field.ErrorList
	if ru.Partition != nil {
		errs = append(errs, nonNegative(int64(*ru.Partition), p.Child("partition"))...)
	}
	if m := ru.MinReadySeconds; m != nil && (*m < 0 || *m > kruiseappsv1beta1.MaxMinReadySeconds) {
		errs = append(errs, field.Invalid(p.Child("minReadySeconds"), *m, "must be between 0 and 300 seconds"))
	}
	if ru.MaxUnavailable != nil {
		errs = append(errs, validateMaxUnavailable(ru.MaxUnavailable, s, p.Child("maxUnavailable"))...)
	}
	errs = append(errs, validatePodUpdatePolicy(s, ru, p.Child("podUpdatePolicy"))...)
	return append(errs, validateUnordered(s, ru, p.Child("unorderedUpdate"))...)
}

// validatePodUpdatePolicy refuses in-place updates without the InPlaceUpdateReady readiness gate: without it,
// a pod's containers would restart while it still counts as Ready.
func validatePodUpdatePolicy(s *kruiseappsv1beta1.StatefulSetSpec, ru *kruiseappsv1beta1.RollingUpdateStatefulSetStrategy, p *field.Path) field.ErrorList {
	switch ru.PodUpdatePolicy {
	case "", kruiseappsv1beta1.RecreatePodUpdateStrategyType:
		return nil
	case kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType:
		for _, g := range s.Template.Spec.ReadinessGates {
			if g.ConditionType == kruiseappspub.InPlaceUpdateReady {
				return nil
			}
		}
		return field.ErrorList{field.Invalid(specPath.Child("template", "spec", "readinessGates"), s.Template.Spec.ReadinessGates,
			fmt.Sprintf("must contains %s when podUpdatePolicy is %s", kruiseappspub.InPlaceUpdateReady, ru.PodUpdatePolicy))}
	}
	return field.ErrorList{field.NotSupported(p, ru.PodUpdatePolicy, []string{string(kruiseappsv1beta1.RecreatePodUpdateStrategyType),
		string(kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType), string(kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType)})}
}

func validateUnordered(s *kruiseappsv1beta1.StatefulSetSpec, ru *kruiseappsv1beta1.RollingUpdateStatefulSetStrategy, p *field.Path) field.ErrorList {
	if ru.UnorderedUpdate == nil {
		return nil
	}
	var errs field.ErrorList
	if s.PodManagementPolicy != appsv1.ParallelPodManagement {
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, "unorderedUpdate "+parallelOnly))
	}
	if err := ru.UnorderedUpdate.PriorityStrategy.Validate(); err != nil {
		errs = append(errs, field.Invalid(p.Child("priorityStrategy"), field.OmitValueType{}, err.Error()))
	}
	return errs
}

// validateClaimStrategies checks the retention policy and the claim update strategy.
func validateClaimStrategies(s *kruiseappsv1beta1.StatefulSetSpec) field.ErrorList {
	var errs field.ErrorList
	if r := s.PersistentVolumeClaimRetentionPolicy; r != nil {
		p := specPath.Child("persistentVolumeClaimRetentionPolicy")
		errs = append(errs, validateRetention(r.WhenDeleted, p.Child("whenDeleted"))...)
		errs = append(errs, validateRetention(r.WhenScaled, p.Child("whenScaled"))...)
	}
	switch s.VolumeClaimUpdateStrategy.Type {
	case "", kruiseappsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType, kruiseappsv1beta1.OnPVCDeleteVolumeClaimUpdateStrategyType:
	default:
		errs = append(errs, field.NotSupported(specPath.Child("volumeClaimUpdateStrategy", "type"), s.VolumeClaimUpdateStrategy.Type,
			[]string{string(kruiseappsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType), string(kruiseappsv1beta1.OnPVCDeleteVolumeClaimUpdateStrategyType)}))
	}
	return errs
}

func validateRetention(t kruiseappsv1beta1.PersistentVolumeClaimRetentionPolicyType, p *field.Path) field.ErrorList {
	switch t {
	case kruiseappsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType, kruiseappsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, t, []string{string(kruiseappsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType),
		string(kruiseappsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType)})}
}
