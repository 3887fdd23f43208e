package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget/internal/plan"
)

// writeStatus computes the budget's status and writes it when it changed. The write is an update of the
// budget as read, which conflicts when the pod validating webhook recorded a disruption meanwhile: the count
// is then made again on the budget read past the cache, once; a second lost race is reported as lost.
func (r *Reconciler) writeStatus(ctx context.Context, pub *kruisepolicyv1alpha1.PodUnavailableBudget, pods []*corev1.Pod,
	total int32) (plan.Result, bool, error) {
	for attempt := 1; ; attempt++ {
		res, err := plan.Status(plan.Input{PUB: pub, Pods: pods, Total: total, Now: r.Clock.Now()})
		if err != nil {
			r.Recorder.Eventf(pub, nil, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Reconcile",
				"Failed to calculate the number of expected pods: %v", err)
			return plan.Result{}, false, terminal(err)
		}
		if equality.Semantic.DeepEqual(&pub.Status, &res.Status) {
			return res, false, nil
		}
		err = r.update(ctx, pub, res.Status, len(pods))
		if !apierrors.IsConflict(err) {
			return res, false, err
		}
		if attempt == 2 {
			return res, true, nil
		}
		if pub, err = r.reread(ctx, pub); pub == nil || err != nil {
			return plan.Result{}, false, err
		}
	}
}

func (r *Reconciler) update(ctx context.Context, pub *kruisepolicyv1alpha1.PodUnavailableBudget,
	status kruisepolicyv1alpha1.PodUnavailableBudgetStatus, pods int) error {
	next := pub.DeepCopy()
	next.Status = status
	if err := r.Client.Status().Update(ctx, next); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return client.IgnoreNotFound(err)
		}
		return fmt.Errorf("updating status: %w", err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Updated status", "pods", pods, "totalReplicas", status.TotalReplicas,
		"desiredAvailable", status.DesiredAvailable, "currentAvailable", status.CurrentAvailable, "unavailableAllowed", status.UnavailableAllowed)
	if pods == 0 {
		r.Recorder.Eventf(pub, nil, corev1.EventTypeNormal, "NoPods", "Reconcile", "No matching pods found")
	}
	return nil
}

// reread reads pub past the cache; nil when it is gone.
func (r *Reconciler) reread(ctx context.Context, pub *kruisepolicyv1alpha1.PodUnavailableBudget) (*kruisepolicyv1alpha1.PodUnavailableBudget, error) {
	fresh := &kruisepolicyv1alpha1.PodUnavailableBudget{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(pub), fresh); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return fresh, nil
}

// markPods writes the related-pub annotation (both keys, as upstream) on the budget's pods that carry neither:
// the pod validating webhook reads the budget of a pod from it, and the webhook configuration calls the
// manager only for pods that carry it.
func (r *Reconciler) markPods(ctx context.Context, pub *kruisepolicyv1alpha1.PodUnavailableBudget, pods []*corev1.Pod) error {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q,%q:%q}}}`,
		kruisepolicyv1alpha1.PodRelatedPubAnnotation, pub.Name, kruisepolicyv1alpha1.PodRelatedPubAnnotationLegacy, pub.Name))
	for _, p := range pods {
		if plan.RelatedBudget(p) != "" {
			continue
		}
		// A copy of the key only: the cached pod must not take the patched object's place.
		target := &corev1.Pod{}
		target.Namespace, target.Name = p.Namespace, p.Name
		err := r.Client.Patch(ctx, target, patch)
		countMarked(err)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("marking pod %s with its budget: %w", p.Name, err)
		}
	}
	return nil
}

// reportNotDeleted records on each pod whose admitted deletion or eviction expired that it was not deleted.
func (r *Reconciler) reportNotDeleted(pub *kruisepolicyv1alpha1.PodUnavailableBudget, pods []*corev1.Pod, names []string) {
	if len(names) == 0 {
		return
	}
	byName := make(map[string]*corev1.Pod, len(pods))
	for _, p := range pods {
		byName[p.Name] = p
	}
	for _, name := range names {
		if p := byName[name]; p != nil {
			r.Recorder.Eventf(p, pub, corev1.EventTypeWarning, "NotDeleted", "Reconcile",
				"Pod was expected by PUB %s/%s to be deleted but it wasn't", pub.Namespace, pub.Name)
		}
	}
}
