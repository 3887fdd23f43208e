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

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
	"github.com/flotilla-dev/flotilla/workloads/podmetrics"
)

// update moves the planned pods to the update revision: in place when the strategy allows and only
// images and template metadata differ, else by recreating them (the scale step then creates the
// replacement with the update revision).
func (r *Reconciler) update(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, revs *revisions, pods []*corev1.Pod) error {
	return eachPod(pods, func(p *corev1.Pod) error { return r.updatePod(ctx, cs, w, revs, p) })
}

func (r *Reconciler) updatePod(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, revs *revisions, p *corev1.Pod) error {
	strategy := cs.Spec.UpdateStrategy.Type
	spec, inPlace := inplaceupdate.Calculate(revs.template(plan.Revision(p)), &cs.Spec.Template)
	if r.RecreateOnVCTChange && strategy != kruiseappsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType {
		// New claim templates reach a pod only through new claims, so through a new pod (upstream's gate;
		// InPlaceOnly keeps its promise and ignores it).
		inPlace = inPlace && revs.vctAllowsInPlace(plan.Revision(p))
	}
	switch {
	case inPlace && strategy != "" && strategy != kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType:
		return r.updateInPlace(ctx, cs, w, revs, p, spec)
	case strategy == kruiseappsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType:
		// Only a template change the webhook did not see gets here; nothing changes until the spec does.
		err := fmt.Errorf("pod %s cannot be updated in place to revision %s and updateStrategy.type is InPlaceOnly", p.Name, revs.update.Name)
		r.Recorder.Eventf(cs, p, corev1.EventTypeWarning, "FailedUpdatePodInPlace", "Update", "%v", err)
		return reconcile.TerminalError(err)
	default:
		return r.deletePod(ctx, cs, w, p)
	}
}

// updateInPlace runs the inPlaceUpdate hook, asks the pod's disruption budget, then marks the pod not ready
// (a status write, so endpoints drop it before its containers restart) and patches images, labels and the
// update state in one write (with inPlaceUpdateStrategy.gracePeriodSeconds, the images and template metadata
// follow after the grace).
func (r *Reconciler) updateInPlace(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, revs *revisions, p *corev1.Pod,
	spec *inplaceupdate.Spec) error {
	d := decide(cs, p, lifecycle.IntentUpdate)
	if !d.Proceed {
		return r.applyDecision(ctx, cs, p, d, nil)
	}
	if held, err := r.heldByBudget(ctx, w, p); held || err != nil {
		return err
	}
	at := metav1.NewTime(r.Clock.Now())
	err := r.patchPodStatus(ctx, cs, p, func(p *corev1.Pod) bool {
		held := lifecycle.ApplyReadiness(p, d, at.Time)
		return inplaceupdate.SetReady(p, false, at) || held
	})
	if err != nil {
		return err
	}
	var applyErr error
	err = r.patchPod(ctx, cs, p, func(p *corev1.Pod) bool {
		if applyErr = startInPlace(p, spec, revs.update.Name, at, gracePeriod(cs)); applyErr != nil {
			return false
		}
		setRevisionLabels(p, revs.update.Name)
		lifecycle.SetState(p, d.State, at.Time)
		return true
	})
	err = errors.Join(applyErr, err)
	podMetrics.Count(podmetrics.UpdateInPlace, err)
	if err != nil {
		return fmt.Errorf("update pod %s in place: %w", p.Name, err)
	}
	r.Recorder.Eventf(cs, p, corev1.EventTypeNormal, "SuccessfulUpdatePodInPlace", "Update",
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

func gracePeriod(cs *kruiseappsv1alpha1.CloneSet) int32 {
	if s := cs.Spec.UpdateStrategy.InPlaceUpdateStrategy; s != nil {
		return s.GracePeriodSeconds
	}
	return 0
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
