package podprobe

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// staleRetry is how soon a reconcile that lost its write races, or acted on a cache behind, looks again.
const staleRetry = 100 * time.Millisecond

// specChange computes a NodePodProbe's next spec from its current one; changed false leaves it as it is.
type specChange func(kruiseappsv1alpha1.NodePodProbeSpec) (next kruiseappsv1alpha1.NodePodProbeSpec, changed bool)

// specWriter rewrites NodePodProbe specs. A NodePodProbe has many writers: every PodProbeMarker with pods on
// the node, the NodePodProbe controller, and the node agent, which writes its status (a new resourceVersion
// too). A write that conflicts is computed again on the NodePodProbe read past the cache, a few times.
type specWriter struct {
	client     client.Client
	live       client.Reader
	controller string // the metrics' controller label
}

// update applies change to npp (as the cache shows it). A NodePodProbe gone meanwhile is not an error: its
// node is gone, and its pods' probes with it.
func (w specWriter) update(ctx context.Context, npp *kruiseappsv1alpha1.NodePodProbe, change specChange) error {
	cur := npp
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if cur == nil {
			cur = &kruiseappsv1alpha1.NodePodProbe{}
			if err := w.live.Get(ctx, client.ObjectKeyFromObject(npp), cur); err != nil {
				return err
			}
		}
		spec, changed := change(cur.Spec)
		if !changed {
			return nil
		}
		next := cur.DeepCopy()
		next.Spec = *spec.DeepCopy()
		err := w.client.Update(ctx, next)
		countSpecUpdate(w.controller, err)
		cur = nil
		if err == nil {
			ctrl.LoggerFrom(ctx).V(1).Info("Updated a NodePodProbe", "NodePodProbe", npp.Name, "entries", len(spec.PodProbes))
		}
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating NodePodProbe %s: %w", npp.Name, err)
	}
	return nil
}

// staleOr turns a lost write race into a quick retry and passes any other error on.
func staleOr(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	return ctrl.Result{}, err
}
