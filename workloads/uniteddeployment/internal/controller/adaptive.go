package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/uniteddeployment/internal/plan"
)

// adaptive reads the subsets' pods, under the adaptive strategy only: the pods are not watched, so the
// result says when to look again.
func (r *Reconciler) adaptive(ctx context.Context, ud *kruiseappsv1alpha1.UnitedDeployment) (plan.Adaptive, error) {
	if !ud.Spec.Topology.ScheduleStrategy.IsAdaptive() {
		return plan.Adaptive{}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ud.Spec.Selector)
	if err != nil {
		return plan.Adaptive{}, fmt.Errorf("spec.selector: %w", err)
	}
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ud.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return plan.Adaptive{}, fmt.Errorf("list pods: %w", err)
	}
	return plan.Schedulability(ud, subsetPods(list.Items), r.Clock.Now()), nil
}

// subsetPods sorts the live pods by subset.
func subsetPods(pods []corev1.Pod) map[string]plan.SubsetPods {
	out := map[string]plan.SubsetPods{}
	for i := range pods {
		pod := &pods[i]
		name, ok := pod.Labels[kruiseappsv1alpha1.SubSetNameLabelKey]
		if !ok || pod.DeletionTimestamp != nil {
			continue
		}
		sp := out[name]
		sp.Replicas++
		if pod.Spec.NodeName == "" {
			sp.Pending = append(sp.Pending, plan.PendingPod{Created: pod.CreationTimestamp.Time, Unschedulable: unschedulable(pod)})
		}
		out[name] = sp
	}
	return out
}

func unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}
