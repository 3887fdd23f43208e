package rollout

import (
	"context"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// PatchBatch exposes patchBatch to the tests against an API server.
func (r *Reconciler) PatchBatch(ctx context.Context, orig, br *rolloutsv1beta1.BatchRelease) error {
	return r.patchBatch(ctx, orig, br)
}
