package admission

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// stepContext is what step rules need to know about the Rollout.
type stepContext struct {
	names      naming
	style      rolloutsv1beta1.RollingStyleType
	knownStyle bool
	limit      int
	hasRouting bool
}

func validateSteps(steps []rolloutsv1beta1.CanaryStep, path *field.Path, c stepContext) field.ErrorList {
	switch {
	case len(steps) == 0:
		return field.ErrorList{field.Required(path, "at least one step is required")}
	case len(steps) > MaxSteps:
		return field.ErrorList{field.TooMany(path, len(steps), MaxSteps)}
	}
	var errs field.ErrorList
	for i := range steps {
		errs = append(errs, validateStep(&steps[i], i, path.Index(i), c)...)
	}
	errs = append(errs, validateReplicasOrder(steps, path, c.names)...)
	if c.names.alpha && c.hasRouting {
		// A weight that also stands for replicas may be reported by both order rules.
		errs = unique(append(errs, validateWeightOrder(path, c.names)...))
	}
	return errs
}

func unique(errs field.ErrorList) field.ErrorList {
	seen := map[string]bool{}
	var out field.ErrorList
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return out
}

func validateStep(s *rolloutsv1beta1.CanaryStep, i int, path *field.Path, c stepContext) field.ErrorList {
	var errs field.ErrorList
	if s.Replicas == nil {
		errs = append(errs, c.names.missingReplicas(path))
	} else if detail := replicasProblem(*s.Replicas); detail != "" && !c.names.derived(i) {
		// A derived value is checked as the step's weight below.
		errs = append(errs, field.Invalid(path.Child("replicas"), s.Replicas.String(), detail))
	}
	if s.Traffic != nil {
		errs = append(errs, validateTraffic(*s.Traffic, i, path, c)...)
	}
	return append(errs, validatePartitionLimit(s, i, path, c)...)
}

// replicasProblem says what is wrong with a step's replicas, or "".
func replicasProblem(r intstr.IntOrString) string {
	if r.Type == intstr.Int {
		if r.IntVal <= 0 {
			return "must be greater than 0"
		}
		return ""
	}
	p, ok := percent(r.StrVal)
	if !ok || p <= 0 || p > 100 {
		return `must be an integer greater than 0 or a percentage with "0%" < replicas <= "100%"`
	}
	return ""
}

// percent parses "N%".
func percent(s string) (int, bool) {
	digits, ok := strings.CutSuffix(s, "%")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

func validateTraffic(traffic string, i int, path *field.Path, c stepContext) field.ErrorList {
	blueGreen := c.style == rolloutsv1beta1.BlueGreenRollingStyle
	p, ok := percent(traffic)
	if ok && p <= 100 && (p > 0 || (blueGreen && p == 0)) {
		return nil
	}
	return field.ErrorList{field.Invalid(path.Child(c.names.trafficName()), c.names.trafficValue(i, traffic),
		c.names.trafficDetail(blueGreen))}
}

// validatePartitionLimit keeps a partition-style step that routes traffic below the limit: rolling back or
// releasing again routes all traffic to the stable pods first, and too few of them would be overloaded.
func validatePartitionLimit(s *rolloutsv1beta1.CanaryStep, i int, path *field.Path, c stepContext) field.ErrorList {
	if !c.knownStyle || c.style != rolloutsv1beta1.PartitionRollingStyle || (s.Traffic == nil && len(s.Matches) == 0) {
		return nil
	}
	if s.Replicas == nil || s.Replicas.Type != intstr.String {
		return nil
	}
	p, ok := percent(s.Replicas.StrVal)
	if !ok || p <= c.limit {
		return nil
	}
	return field.ErrorList{field.Invalid(path.Child(c.names.replicasName(i)), c.names.replicasValue(i, s.Replicas.StrVal),
		fmt.Sprintf("must not be greater than the partition percent limit %d%% in a partition-style release when the step has traffic or matches", c.limit))}
}

// validateReplicasOrder requires, as upstream does, that a step's replicas are not less than the step's
// before it when both are of the same kind (integer or percentage); the two kinds are not comparable without
// the workload's size. Steps further apart are only warned about (see Warnings).
func validateReplicasOrder(steps []rolloutsv1beta1.CanaryStep, path *field.Path, names naming) field.ErrorList {
	var errs field.ErrorList
	for i := 1; i < len(steps); i++ {
		v, isPercent, ok := replicasNumber(steps[i].Replicas)
		prev, prevPercent, prevOK := replicasNumber(steps[i-1].Replicas)
		if ok && prevOK && isPercent == prevPercent && v < prev {
			errs = append(errs, field.Invalid(path.Index(i).Child(names.replicasName(i)),
				names.replicasValue(i, steps[i].Replicas.String()),
				fmt.Sprintf("must not be less than steps[%d].%s", i-1, names.replicasName(i-1))))
		}
	}
	return errs
}

// replicasNumber is a valid replicas value as a number, and whether it is a percentage.
func replicasNumber(r *intstr.IntOrString) (int, bool, bool) {
	if r == nil || replicasProblem(*r) != "" {
		return 0, false, false
	}
	if r.Type == intstr.Int {
		return int(r.IntVal), false, true
	}
	p, _ := percent(r.StrVal)
	return p, true, true
}

// validateWeightOrder is v1alpha1's rule that weights never decrease when traffic is routed.
func validateWeightOrder(path *field.Path, names naming) field.ErrorList {
	var errs field.ErrorList
	last := -1
	for i := range names.weights {
		w := names.weight(i)
		if w == nil {
			continue
		}
		if last >= 0 && *w < *names.weight(last) {
			errs = append(errs, field.Invalid(path.Index(i).Child("weight"), int64(*w),
				fmt.Sprintf("must not be less than steps[%d].weight", last)))
		}
		last = i
	}
	return errs
}
