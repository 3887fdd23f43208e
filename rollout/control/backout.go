package control

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create

// backOutTarget is the workload an aborted release takes its updated pods back from. Its partition already
// keeps every pod on the stable revision, so the workload's own controller recreates each evicted pod there.
type backOutTarget struct {
	Owner    metav1.Object
	Replicas int32
	// Pods selects the workload's pods, Updated those of its update revision.
	Pods, Updated labels.Selector
}

// backOut evicts the updated pods chooseBackOut picks now. Eviction keeps disruption budgets: a pod a budget
// protects waits for the next call, as do the pods the budget of one serving pod at a time holds back.
func backOut(ctx context.Context, c client.Client, t backOutTarget) error {
	pods, err := listActivePods(ctx, c, t.Owner.GetNamespace(), t.Pods)
	if err != nil {
		return err
	}
	for _, p := range chooseBackOut(ownedBy(pods, t.Owner), t.Updated, t.Replicas) {
		if err := evict(ctx, c, &p); err != nil {
			return err
		}
	}
	return nil
}

// chooseBackOut picks the updated pods to evict now: every one that is not Ready (it serves nothing), and
// one Ready pod, the newest, while the workload runs all its replicas Ready. An abort so costs at most one
// serving pod at a time, whatever the workload's own update budget.
func chooseBackOut(pods []corev1.Pod, updated labels.Selector, replicas int32) []corev1.Pod {
	var doomed, serving []corev1.Pod
	for _, p := range pods {
		switch {
		case !updated.Matches(labels.Set(p.Labels)):
		case podcondition.IsReady(&p):
			serving = append(serving, p)
		default:
			doomed = append(doomed, p)
		}
	}
	if len(doomed) > 0 || len(serving) == 0 || countReady(pods) < replicas {
		return doomed
	}
	return []corev1.Pod{slices.MaxFunc(serving, newerPod)}
}

// newerPod orders pods by creation time, then name.
func newerPod(a, b corev1.Pod) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// ownedBy keeps the pods owner controls: an abort never touches a pod another controller runs.
func ownedBy(pods []corev1.Pod, owner metav1.Object) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOfNoCopy(&p); ref != nil && ref.UID == owner.GetUID() {
			out = append(out, p)
		}
	}
	return out
}

// evict asks the API server to evict p. A refusal by a disruption budget (429) waits for the next call;
// a pod already gone is done.
func evict(ctx context.Context, c client.Client, p *corev1.Pod) error {
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}},
	}
	err := c.SubResource("eviction").Create(ctx, p, ev)
	switch {
	case err == nil:
		ctrl.LoggerFrom(ctx).V(1).Info("Evicted an updated pod of an aborted release", "Pod", klog.KObj(p))
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsTooManyRequests(err):
		return nil
	default:
		return fmt.Errorf("evicting pod %s of the aborted release: %w", p.Name, err)
	}
}
