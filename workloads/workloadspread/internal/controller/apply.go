package controller

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/admission"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/internal/plan"
)

// Event reasons (upstream's where upstream has one).
const (
	ReasonTargetNotFound       = "TargetNotFound"
	ReasonInvalidSubset        = "InvalidSubset"
	ReasonCreatePodFailed      = "CreatePodFailed"
	ReasonDeletePodFailed      = "DeletePodFailed"
	ReasonUpdateDeletionCost   = "UpdatePodDeletionCostFailed"
	ReasonRescheduleSubsetPods = "RescheduleSubsetPods"
	ReasonSubsetUnschedulable  = "SubsetUnschedulable"
)

// apply does what the outcome asks before the status is written: deletion costs, and an event per expired
// entry.
func (r *Reconciler) apply(ctx context.Context, ws *kruiseappsv1alpha1.WorkloadSpread, pods []*corev1.Pod, replicas int32, out plan.Outcome) error {
	for _, e := range out.Expired {
		reason, msg := ReasonDeletePodFailed, "Pod %s of subset %s was expected to be deleted but it wasn't"
		if e.Creating {
			reason, msg = ReasonCreatePodFailed, "Pod %s of subset %s was expected to be created but it wasn't"
		}
		r.Recorder.Eventf(ws, nil, corev1.EventTypeWarning, reason, "Spread", msg, e.Pod, e.Subset)
	}
	return r.setCosts(ctx, ws, pods, replicas)
}

// setCosts patches each matched pod whose deletion cost differs from the planned one, for targets that read
// them.
func (r *Reconciler) setCosts(ctx context.Context, ws *kruiseappsv1alpha1.WorkloadSpread, pods []*corev1.Pod, replicas int32) error {
	if gk, ok := admission.TargetKind(ws.Spec.TargetReference); !ok || !plan.ReadsCosts(gk) {
		return nil
	}
	costs := plan.DeletionCosts(ws, pods, replicas)
	for _, pod := range pods {
		cost, ok := costs[pod.Name]
		if !ok || !plan.NeedsCost(pod, cost) {
			continue
		}
		err := patchCost(ctx, r.Client, pod, cost)
		countCost(err)
		if err != nil {
			r.Recorder.Eventf(ws, pod, corev1.EventTypeWarning, ReasonUpdateDeletionCost, "Spread", "Setting the deletion cost of pod %s failed", pod.Name)
			return err
		}
	}
	return nil
}

// patchCost sets the annotation with a merge patch: the cache holds some pods slim, and an update from them
// would drop their containers.
func patchCost(ctx context.Context, c client.Client, pod *corev1.Pod, cost int) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, plan.DeletionCostAnnotation, strconv.Itoa(cost))
	err := c.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(patch)))
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("setting the deletion cost of pod %s: %w", pod.Name, err)
	}
	return nil
}

// reschedule deletes the pods an Adaptive subset could not schedule: their workload creates them again, and
// the webhook places them in a later subset while this one is marked unschedulable.
func (r *Reconciler) reschedule(ctx context.Context, ws *kruiseappsv1alpha1.WorkloadSpread, pods []*corev1.Pod) error {
	for _, pod := range pods {
		ctrl.LoggerFrom(ctx).Info("Deleting an unschedulable pod", "Pod", klog.KObj(pod))
		pre := client.Preconditions{UID: &pod.UID}
		if err := r.Client.Delete(ctx, pod, pre); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting unschedulable pod %s: %w", pod.Name, err)
		}
		r.Recorder.Eventf(ws, pod, corev1.EventTypeNormal, ReasonRescheduleSubsetPods, "Reschedule",
			"Pod %s could not be scheduled in its subset and was deleted to be created again", pod.Name)
	}
	return nil
}

// writeStatus writes the status when it changed, locked to the version it was computed from: lost is true
// when the webhook wrote meanwhile, and the status must be derived again.
func (r *Reconciler) writeStatus(ctx context.Context, ws *kruiseappsv1alpha1.WorkloadSpread, next kruiseappsv1alpha1.WorkloadSpreadStatus) (bool, error) {
	if equality.Semantic.DeepEqual(ws.Status, next) {
		return false, nil
	}
	marked := newlyUnschedulable(ws.Status, next)
	// The patch reads the written object back into ws: what changed is known only before.
	err := statuspatch.WriteLocked(ctx, r.Client, ws, ws.Status, next)
	if apierrors.IsConflict(err) {
		return true, nil
	}
	for _, name := range marked {
		if err == nil {
			r.Recorder.Eventf(ws, nil, corev1.EventTypeWarning, ReasonSubsetUnschedulable, "Spread",
				"Pods of subset %s stayed unschedulable past rescheduleCriticalSeconds: new pods skip it for now", name)
		}
	}
	return false, err
}

// newlyUnschedulable are the subsets next marks unschedulable and old did not.
func newlyUnschedulable(old, next kruiseappsv1alpha1.WorkloadSpreadStatus) []string {
	was := map[string]bool{}
	for _, s := range old.SubsetStatuses {
		was[s.Name] = plan.Unschedulable(&s)
	}
	var out []string
	for _, s := range next.SubsetStatuses {
		if plan.Unschedulable(&s) && !was[s.Name] {
			out = append(out, s.Name)
		}
	}
	return out
}
