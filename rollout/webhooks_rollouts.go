package rollout

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	rolloutcontroller "github.com/flotilla-dev/flotilla/rollout/internal/controller/rollout"
)

// rolloutsNaming reads the namespace's Rollouts naming a workload of kind and name through the Rollout
// controller's index: every workload update and every Rollout write passes here, and listing a namespace of a
// thousand Rollouts copies them all each time. A reader without the index (no Rollout controller in this
// manager) lists them all.
func rolloutsNaming(ctx context.Context, reader client.Reader, namespace, kind, name string) ([]rolloutsv1beta1.Rollout, error) {
	list := &rolloutsv1beta1.RolloutList{}
	byRef := client.MatchingFields{rolloutcontroller.WorkloadRefIndex: kind + "/" + name}
	if err := reader.List(ctx, list, client.InNamespace(namespace), byRef); err == nil {
		return list.Items, nil
	}
	if err := reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Rollouts: %w", err)
	}
	return list.Items, nil
}
