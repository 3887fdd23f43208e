package v1alpha1

import (
	"fmt"
	"strings"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// Annotations and labels read and written by PodUnavailableBudget protection.
const (
	// PubProtectOperationAnnotation on a PodUnavailableBudget lists the protected operations,
	// comma-separated (e.g. "DELETE,EVICT"); absent means DELETE, UPDATE and EVICT.
	PubProtectOperationAnnotation = "kruise.io/pub-protect-operations"

	// PubProtectTotalReplicasAnnotation on a PodUnavailableBudget gives the total replicas to protect
	// when they cannot be read from the target workload (no scale subresource, bare pods).
	PubProtectTotalReplicasAnnotation = "pub.kruise.io/protect-total-replicas"

	// PodPubNoProtectionAnnotation set to "true" on a pod exempts it from every budget, e.g. to
	// force its deletion.
	PodPubNoProtectionAnnotation = "pub.kruise.io/no-protect"

	// PodRelatedPubAnnotation on a pod names the budget that protects it.
	PodRelatedPubAnnotation = "pub.kruise.io/related-pub"
	// PodRelatedPubAnnotationLegacy is the older key of PodRelatedPubAnnotation; both are written so
	// that either generation of readers finds the budget.
	PodRelatedPubAnnotationLegacy = "kruise.io/related-pub"

	// PubUnavailablePodLabelPrefix: a pod with any label key of this prefix counts as unavailable to
	// workloads and budgets even when it is ready (used for non-disruptive offlining); see
	// kruiseappspub.HasUnavailableLabel.
	PubUnavailablePodLabelPrefix = kruiseappspub.PubUnavailablePodLabelPrefix
)

// Resource deletion protection, enforced by the validating webhook on DELETE.
const (
	// DeletionProtectionKey is the object label whose value selects the protection type.
	DeletionProtectionKey = "policy.kruise.io/delete-protection"

	// DeletionProtectionTypeAlways forbids deletion until the label is removed.
	DeletionProtectionTypeAlways = "Always"
	// DeletionProtectionTypeCascading forbids deletion while the object still owns active resources
	// (replicas > 0, active pods or bound PVCs in a namespace, existing custom resources of a CRD).
	DeletionProtectionTypeCascading = "Cascading"
)

// ParsePubProtectOperations parses the value of PubProtectOperationAnnotation. Blank items and
// surrounding spaces are ignored; an unknown operation is an error.
func ParsePubProtectOperations(value string) ([]PubOperation, error) {
	var ops []PubOperation
	for _, item := range strings.Split(value, ",") {
		op := PubOperation(strings.TrimSpace(item))
		if op == "" {
			continue
		}
		if !isPubOperation(op) {
			return nil, fmt.Errorf("unknown protect operation %q in %s", op, PubProtectOperationAnnotation)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// JoinPubProtectOperations renders operations as a PubProtectOperationAnnotation value.
func JoinPubProtectOperations(ops []PubOperation) string {
	items := make([]string, len(ops))
	for i, op := range ops {
		items[i] = string(op)
	}
	return strings.Join(items, ",")
}

func isPubOperation(op PubOperation) bool {
	switch op {
	case PubUpdateOperation, PubDeleteOperation, PubEvictOperation, PubResizeOperation:
		return true
	}
	return false
}
