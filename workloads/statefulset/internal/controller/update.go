package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
	"github.com/flotilla-dev/flotilla/workloads/parallel"
	"github.com/flotilla-dev/flotilla/workloads/podmetrics"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

// podWorkers bounds the pods one reconcile writes to at once.
const podWorkers = 16

// eachPod runs fn for every pod, at most podWorkers at once, and joins their errors: one pod's lost write
// race must not hold the others back.
func eachPod(pods []*corev1.Pod, fn func(*corev1.Pod) error) error {
	return parallel.Each(pods, podWorkers, fn)
}

// updatePods moves the planned pods to the update revision.
func (r *Reconciler) updatePods(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, revs *revisions, pods []*corev1.Pod) error {
	return eachPod(pods, func(p *corev1.Pod) error { return r.updatePod(ctx, set, w, revs, p) })
}

// updatePod updates a pod in place when podUpdatePolicy allows it and only images and template metadata
// differ, and otherwise deletes it for the next pass to recreate with the update revision. InPlaceOnly
// never recreates: a change the webhook did not see waits for the spec to change again.
func (r *Reconciler) updatePod(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, revs *revisions, p *corev1.Pod) error {
	policy := podUpdatePolicy(set)
	inPlaceAllowed := policy == kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType || policy == kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType
	spec, inPlace := inplaceupdate.Calculate(revs.template(plan.Revision(p)), revs.template(revs.update.Name))
	switch {
	case inPlaceAllowed && inPlace:
		return r.updateInPlace(ctx, set, w, revs, p, spec)
	case policy == kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType:
		err := fmt.Errorf("find strategy is InPlaceOnly but Pod %s can not update in-place", p.Name)
		r.Recorder.Eventf(set, p, corev1.EventTypeWarning, "FailedUpdatePodInPlace", "Update",
			"failed to update pod %s in-place(revision %s): %v", p.Name, revs.update.Name, err)
		return reconcile.TerminalError(err)
	default:
		return r.deletePod(ctx, set, p)
	}
}

func podUpdatePolicy(set *kruiseappsv1beta1.StatefulSet) kruiseappsv1beta1.PodUpdateStrategyType {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		return ru.PodUpdatePolicy
	}
	return kruiseappsv1beta1.RecreatePodUpdateStrategyType
}

func gracePeriod(set *kruiseappsv1beta1.StatefulSet) int32 {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.InPlaceUpdateStrategy != nil {
		return ru.InPlaceUpdateStrategy.GracePeriodSeconds
	}
	return 0
}

// updateInPlace runs the inPlaceUpdate hook, asks the pod's disruption budget, then marks the pod not ready
// (a status write, so endpoints drop it before its containers restart) and patches images, labels and the
// update state in one write; with inPlaceUpdateStrategy.gracePeriodSeconds the images and template metadata
// follow after the grace.
func (r *Reconciler) updateInPlace(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, revs *revisions, p *corev1.Pod,
	spec *inplaceupdate.Spec) error {
	d := lifecycle.Plan(set.Spec.Lifecycle, p, lifecycle.IntentUpdate)
	if !d.Proceed {
		return r.applyDecision(ctx, set, p, d, nil)
	}
	if held, err := r.heldByBudget(ctx, w, p); held || err != nil {
		return err
	}
	at := metav1.NewTime(r.Clock.Now())
	err := r.patchPodStatus(ctx, set, p, func(p *corev1.Pod) bool {
		held := lifecycle.ApplyReadiness(p, d, at.Time)
		return inplaceupdate.SetReady(p, false, at) || held
	})
	if err != nil {
		return err
	}
	var applyErr error
	err = r.patchPod(ctx, set, p, func(p *corev1.Pod) bool {
		if applyErr = startInPlace(p, spec, revs.update.Name, at, gracePeriod(set)); applyErr != nil {
			return false
		}
		p.Labels[plan.RevisionLabel] = revs.update.Name
		lifecycle.SetState(p, d.State, at.Time)
		return true
	})
	err = errors.Join(applyErr, err)
	podMetrics.Count(podmetrics.UpdateInPlace, err)
	if err != nil {
		r.Recorder.Eventf(set, p, corev1.EventTypeWarning, "FailedUpdatePodInPlace", "Update",
			"failed to update pod %s in-place(revision %s): %v", p.Name, revs.update.Name, err)
		return fmt.Errorf("update pod %s in place: %w", p.Name, err)
	}
	r.Recorder.Eventf(set, p, corev1.EventTypeNormal, "SuccessfulUpdatePodInPlace", "Update",
		"successfully update pod %s in-place(revision %s)", p.Name, revs.update.Name)
	return nil
}

// startInPlace writes the update onto the pod, or, with a grace period, only its intent: the containers
// change once the grace has let traffic drain from the not-ready pod (refresh resumes it).
func startInPlace(p *corev1.Pod, spec *inplaceupdate.Spec, revision string, at metav1.Time, grace int32) error {
	if grace > 0 {
		return inplaceupdate.Defer(p, spec, revision, at, grace)
	}
	return inplaceupdate.Apply(p, spec, revision, at)
}

// budgetRetry is how soon a pod an in-place update was held back from by its disruption budget is asked about
// again (upstream's second).
const budgetRetry = time.Second

// heldByBudget asks the checks the modules that budget disruptions registered (a PodUnavailableBudget with
// PodUnavailableBudgetUpdateGate) whether p may go unavailable now. It must be asked before the pod is marked
// not ready: a pod that is not ready no longer counts against its budget, so the pod webhook would let the
// update through. A held pod waits for budgetRetry.
func (r *Reconciler) heldByBudget(ctx context.Context, w *world, p *corev1.Pod) (bool, error) {
	if r.AllowInPlaceUpdate == nil {
		return false, nil
	}
	ok, err := r.AllowInPlaceUpdate(ctx, p)
	if err != nil {
		return true, fmt.Errorf("asking the disruption budget of pod %s: %w", p.Name, err)
	}
	if !ok {
		ctrl.LoggerFrom(ctx).V(1).Info("Holding an in-place update for the pod's disruption budget", "Pod", klog.KObj(p))
		w.wakeIn(budgetRetry)
	}
	return !ok, nil
}
