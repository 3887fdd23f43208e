package admission

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// validateTrafficRoutings checks the providers of a release; the engine drives at most one.
func validateTrafficRoutings(routings []rolloutsv1beta1.TrafficRoutingRef, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(routings) > 1 {
		errs = append(errs, field.TooMany(path, len(routings), 1))
	}
	for i := range routings {
		errs = append(errs, validateTrafficRouting(&routings[i], path.Index(i))...)
	}
	return errs
}

func validateTrafficRouting(tr *rolloutsv1beta1.TrafficRoutingRef, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if tr.Service == "" {
		errs = append(errs, field.Required(path.Child("service"), ""))
	}
	if tr.GracePeriodSeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("gracePeriodSeconds"), int64(tr.GracePeriodSeconds),
			"must be greater than or equal to 0"))
	}
	// As upstream: an empty customNetworkRefs list counts as set (Warnings says it routes nothing).
	if tr.Ingress == nil && tr.Gateway == nil && tr.CustomNetworkRefs == nil {
		errs = append(errs, field.Required(path, "one of ingress, gateway or customNetworkRefs is required"))
	}
	if tr.Ingress != nil && tr.Ingress.Name == "" {
		errs = append(errs, field.Required(path.Child("ingress", "name"), ""))
	}
	if tr.Gateway != nil && (tr.Gateway.HTTPRouteName == nil || *tr.Gateway.HTTPRouteName == "") {
		errs = append(errs, field.Required(path.Child("gateway", "httpRouteName"), ""))
	}
	return errs
}
