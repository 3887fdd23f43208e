package guard

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/webhooks"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget/internal/plan"
)

// RefusedReason is the reason of the Warning event a refused disruption records on its pod (upstream's, for
// every operation).
const RefusedReason = "PubPreventPodDeletion"

// conflictRetrySeconds is the Retry-After of a disruption refused because its budget kept changing, as the
// eviction API's for its PodDisruptionBudget.
const conflictRetrySeconds = 10

var pods = schema.GroupResource{Resource: "pods"}

// Validation is the pod validation of the budgets: deletions and evictions are held when deletions is set
// (PodUnavailableBudgetDeleteGate), updates that can take a pod out of service when updates is set
// (PodUnavailableBudgetUpdateGate). A refused eviction is answered 429 TooManyRequests, as the eviction API
// answers for a PodDisruptionBudget (kubectl drain waits and retries); a refused update or deletion 403, as
// upstream's; a budget that kept changing under the write 504 with a Retry-After.
func (g *Guard) Validation(deletions, updates bool) webhooks.PodValidation {
	return func(ctx context.Context, d webhooks.PodDisruption) error {
		op := kruisepolicyv1alpha1.PubOperation(d.Operation)
		switch {
		case op == kruisepolicyv1alpha1.PubUpdateOperation && (!updates || !plan.UnavailableChanged(d.Pod, d.Updated)):
			return nil
		case op != kruisepolicyv1alpha1.PubUpdateOperation && !deletions:
			return nil
		}
		decision, pub, err := g.Hold(ctx, d.Pod, op, d.DryRun)
		countDisruption(op, decision, err)
		if err != nil {
			return g.failure(ctx, d.Pod, op, err)
		}
		return g.answer(ctx, d.Pod, pub, op, decision, d.UserName)
	}
}

// AllowInPlaceUpdate is the check a workload controller asks before it updates pod in place: false while the
// budget allows no more unavailable pods, or kept changing under the write (ask again shortly).
func (g *Guard) AllowInPlaceUpdate(ctx context.Context, pod *corev1.Pod) (bool, error) {
	op := kruisepolicyv1alpha1.PubUpdateOperation
	decision, pub, err := g.Hold(ctx, pod, op, false)
	countDisruption(op, decision, err)
	if errors.Is(err, errConflicts) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return g.answer(ctx, pod, pub, op, decision, "") == nil, nil
}

// answer turns a decision into the admission's answer, recording a refusal.
func (g *Guard) answer(ctx context.Context, pod *corev1.Pod, pub *kruisepolicyv1alpha1.PodUnavailableBudget,
	op kruisepolicyv1alpha1.PubOperation, d plan.Decision, user string) error {
	log := ctrl.LoggerFrom(ctx).WithValues("Pod", pod.Namespace+"/"+pod.Name, "operation", op)
	if d.Verdict == plan.Exempt || d.Verdict == plan.Admit {
		log.V(1).Info("Letting a pod disruption through", "verdict", d.Verdict, "reason", d.Reason)
		return nil
	}
	log.V(1).Info("Refusing a pod disruption", "PodUnavailableBudget", pub.Name, "reason", d.Reason, "user", user)
	g.Recorder.Eventf(pod, pub, corev1.EventTypeWarning, RefusedReason, string(op),
		"PodUnavailableBudget %s refused the %s of the pod: %s", pub.Name, op, d.Reason)
	if d.Verdict == plan.Refuse && op == kruisepolicyv1alpha1.PubEvictOperation {
		return tooManyRequests(pub, d.Reason)
	}
	return apierrors.NewForbidden(pods, pod.Name, fmt.Errorf("PodUnavailableBudget %s: %s", pub.Name, d.Reason))
}

// tooManyRequests is the eviction API's refusal for a budget, with its DisruptionBudget cause.
func tooManyRequests(pub *kruisepolicyv1alpha1.PodUnavailableBudget, reason string) error {
	err := apierrors.NewTooManyRequests(fmt.Sprintf("Cannot evict pod as it would violate the pod's PodUnavailableBudget %s.", pub.Name), 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf("PodUnavailableBudget %s: %s", pub.Name, reason),
	})
	return err
}

// failure answers a disruption the budget could not be read or written for.
func (g *Guard) failure(ctx context.Context, pod *corev1.Pod, op kruisepolicyv1alpha1.PubOperation, err error) error {
	ctrl.LoggerFrom(ctx).Info("Could not hold a pod disruption to its budget", "Pod", pod.Namespace+"/"+pod.Name,
		"operation", op, "error", err.Error())
	if errors.Is(err, errConflicts) {
		return apierrors.NewTimeoutError(fmt.Sprintf("couldn't record the %s of pod %s in its PodUnavailableBudget: %v", op, pod.Name, err),
			conflictRetrySeconds)
	}
	return apierrors.NewInternalError(err)
}
