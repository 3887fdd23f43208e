package plan

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

// DesiredAvailable is how many of total pods must stay available: total less maxUnavailable (a percentage
// rounded up, as upstream), or minAvailable (a number as given, a percentage of total rounded up). Neither set
// asks for none; an unreadable value is an error naming its field.
func DesiredAvailable(spec *kruisepolicyv1alpha1.PodUnavailableBudgetSpec, total int32) (int32, error) {
	switch {
	case spec.MaxUnavailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(total), true)
		if err != nil {
			return 0, fmt.Errorf("spec.maxUnavailable: %w", err)
		}
		return max(total-int32(n), 0), nil
	case spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.Int:
		return spec.MinAvailable.IntVal, nil
	case spec.MinAvailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(total), true)
		if err != nil {
			return 0, fmt.Errorf("spec.minAvailable: %w", err)
		}
		return int32(n), nil
	}
	return 0, nil
}

// TotalOverride reads pub.kruise.io/protect-total-replicas: the total replicas the budget counts instead of
// its workloads' (for pods no scalable workload owns). An unreadable value (which the webhook refuses) is
// ignored rather than read as 0, which would protect nothing.
func TotalOverride(pub *kruisepolicyv1alpha1.PodUnavailableBudget) (int32, bool) {
	value, ok := pub.Annotations[kruisepolicyv1alpha1.PubProtectTotalReplicasAnnotation]
	if !ok || value == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}

// Protects reports whether pub protects op: the operations kruise.io/pub-protect-operations lists, or, with
// the annotation absent or empty, DELETE, UPDATE and EVICT.
func Protects(pub *kruisepolicyv1alpha1.PodUnavailableBudget, op kruisepolicyv1alpha1.PubOperation) bool {
	value := pub.Annotations[kruisepolicyv1alpha1.PubProtectOperationAnnotation]
	if strings.TrimSpace(value) == "" {
		return op == kruisepolicyv1alpha1.PubDeleteOperation || op == kruisepolicyv1alpha1.PubUpdateOperation ||
			op == kruisepolicyv1alpha1.PubEvictOperation
	}
	for _, item := range strings.Split(value, ",") {
		if kruisepolicyv1alpha1.PubOperation(strings.TrimSpace(item)) == op {
			return true
		}
	}
	return false
}
