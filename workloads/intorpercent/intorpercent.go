// Package intorpercent checks and reads the integer-or-percentage fields of the workloads' update strategies
// (partition, maxUnavailable, maxSurge) the way upstream's admission webhooks do.
package intorpercent

import (
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate requires v to be a non-negative integer or a percentage ("20%") of at most 100%.
func Validate(v intstr.IntOrString, p *field.Path) field.ErrorList {
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return field.ErrorList{field.Invalid(p, v.IntVal, "must be greater than or equal to 0")}
		}
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsValidPercent(v.StrVal) {
		errs = append(errs, field.Invalid(p, v.StrVal, msg))
	}
	if n, ok := Percent(v.StrVal); ok && n > 100 {
		errs = append(errs, field.Invalid(p, v.StrVal, "must not be greater than 100%"))
	}
	return errs
}

// Percent reads a valid percentage (validation.IsValidPercent); one too large for an int reads as the
// largest.
func Percent(s string) (int, bool) {
	if len(validation.IsValidPercent(s)) > 0 {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
	if err != nil {
		return math.MaxInt, true
	}
	return n, true
}
