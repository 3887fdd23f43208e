package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/workloadref"
)

// gather reads the active pods a budget protects and the replicas it counts: those of its target workload, or
// of the workloads that own the pods its selector matches, unless pub.kruise.io/protect-total-replicas says
// otherwise. The pods are the cache's: read-only.
func (r *Reconciler) gather(ctx context.Context, pub *kruisepolicyv1alpha1.PodUnavailableBudget) ([]*corev1.Pod, int32, error) {
	var pods []*corev1.Pod
	var total int32
	var err error
	if ref := pub.Spec.TargetReference; ref != nil {
		pods, total, err = r.targetPods(ctx, pub.Namespace, ref)
	} else {
		pods, total, err = r.selectedPods(ctx, pub)
	}
	if err != nil {
		return nil, 0, err
	}
	if n, ok := plan.TotalOverride(pub); ok {
		total = n
	}
	return active(pods), total, nil
}

// targetPods are the pods of the workload ref names: those it (or its ReplicaSets) controls, or, for a
// workload that controls none, those its scale's selector matches. A workload that is gone or scaled to 0
// protects none.
func (r *Reconciler) targetPods(ctx context.Context, ns string, ref *kruisepolicyv1alpha1.TargetReference) ([]*corev1.Pod, int32, error) {
	w, err := r.finder.Find(ctx, ns, refOf(ref), false)
	if w == nil || w.Replicas == 0 || err != nil {
		return nil, 0, err
	}
	var pods []*corev1.Pod
	for _, owner := range w.Owners {
		owned, err := r.pods.Get(ctx, ns, string(owner), nil)
		if err != nil {
			return nil, 0, err
		}
		pods = append(pods, owned...)
	}
	if len(pods) == 0 && w.Selector != nil {
		if pods, err = r.pods.InNamespace(ctx, ns, w.Selector); err != nil {
			return nil, 0, err
		}
	}
	return pods, w.Replicas, nil
}

// selectedPods are the pods the budget's selector matches, counted against the replicas of the workloads
// that own them (each once). A selector that selects nothing valid protects no pod.
func (r *Reconciler) selectedPods(ctx context.Context, pub *kruisepolicyv1alpha1.PodUnavailableBudget) ([]*corev1.Pod, int32, error) {
	sel, err := metav1.LabelSelectorAsSelector(pub.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil, 0, nil // the webhook refuses such a selector; an empty one would take every pod
	}
	pods, err := r.pods.InNamespace(ctx, pub.Namespace, sel)
	if err != nil {
		return nil, 0, err
	}
	if _, ok := plan.TotalOverride(pub); ok {
		return pods, 0, nil
	}
	total, err := r.ownersReplicas(ctx, pub.Namespace, active(pods))
	return pods, total, err
}

// ownersReplicas adds up the replicas of the top-level workloads of pods (a ReplicaSet's Deployment).
func (r *Reconciler) ownersReplicas(ctx context.Context, ns string, pods []*corev1.Pod) (int32, error) {
	seen := map[types.UID]bool{}
	workloads := map[types.UID]int32{}
	for _, p := range pods {
		owner := metav1.GetControllerOfNoCopy(p)
		if owner == nil || seen[owner.UID] {
			continue
		}
		seen[owner.UID] = true
		w, err := r.finder.Find(ctx, ns, workloadref.Ref{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID}, true)
		if err != nil {
			return 0, err
		}
		if w != nil {
			workloads[w.UID] = w.Replicas
		}
	}
	var total int32
	for _, n := range workloads {
		total += n
	}
	return total, nil
}

func refOf(t *kruisepolicyv1alpha1.TargetReference) workloadref.Ref {
	return workloadref.Ref{APIVersion: t.APIVersion, Kind: t.Kind, Name: t.Name}
}

func active(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if plan.Active(p) {
			out = append(out, p)
		}
	}
	return out
}
