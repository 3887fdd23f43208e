// Package nativedaemonset moves native DaemonSets through the batches of a partition-style release. A native
// DaemonSet has no partition: the release switches it to OnDelete and writes each batch to the
// rollouts.kruise.io/daemonset-advanced-control annotation, and this controller deletes old pods until the
// batch is reached; the DaemonSet controller recreates them on the new revision.
package nativedaemonset

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// +kubebuilder:rbac:groups=apps,resources=daemonsets;controllerrevisions,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// ControllerName names the controller and the events it records.
const ControllerName = "nativedaemonset"

// deletionTTL bounds how long a deletion the cache does not show yet holds back further deletions.
const deletionTTL = time.Minute

// Reconciler deletes the old pods of native DaemonSets in a batch release.
type Reconciler struct {
	client   client.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock
	deleting *deletions
}

// SetupWithManager registers the controller on mgr.
func SetupWithManager(mgr ctrl.Manager) error {
	r := &Reconciler{
		client:   mgr.GetClient(),
		recorder: mgr.GetEventRecorder(ControllerName),
		clock:    clock.RealClock{},
		deleting: newDeletions(),
	}
	err := ctrl.NewControllerManagedBy(mgr).Named(ControllerName).
		For(&appsv1.DaemonSet{}).
		Owns(&corev1.Pod{}).
		// The batch waits for its revision to be the DaemonSet's newest ControllerRevision.
		Watches(&appsv1.ControllerRevision{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&appsv1.DaemonSet{}, handler.OnlyControllerOwner()), builder.WithPredicates(reconcileutil.DaemonSetRevisions)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the %s controller: %w", ControllerName, err)
	}
	return nil
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ds := &appsv1.DaemonSet{}
	if err := r.client.Get(ctx, req.NamespacedName, ds); err != nil {
		r.deleting.forget(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	raw, ok := ds.Annotations[rolloutsv1beta1.DaemonSetAdvancedControlAnnotation]
	if !ok || ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		// Not in a release, or the DaemonSet controller rolls it by itself.
		r.deleting.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	batch, partition, err := control.ParseDaemonSetAdvancedControl(raw)
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("DaemonSet", klog.KObj(ds)))
	c, err := r.observe(ctx, ds, batch.BatchRevision, partition)
	if err != nil || c == nil {
		return ctrl.Result{}, err
	}
	doomed, more := choosePodsToDelete(*c)
	if err := r.deletePods(ctx, ds, doomed); err != nil {
		return ctrl.Result{}, err
	}
	if more && ds.Spec.MinReadySeconds > 0 {
		// Pods turn available by time alone, with no event to wake us.
		return ctrl.Result{RequeueAfter: time.Duration(ds.Spec.MinReadySeconds) * time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// observe builds the choice for ds, or nil while the DaemonSet controller has not caught up with the
// template the batch asks for: pods recreated now would not be of the batch revision.
func (r *Reconciler) observe(ctx context.Context, ds *appsv1.DaemonSet, revision string, partition int32) (*choice, error) {
	if ds.Status.ObservedGeneration < ds.Generation {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, reconcile.TerminalError(fmt.Errorf("DaemonSet selector: %w", err))
	}
	if sel.Empty() || sel.String() == "" {
		// Selects the whole namespace or nothing: no pods to act on.
		return nil, nil
	}
	inNS, bySel := client.InNamespace(ds.Namespace), client.MatchingLabelsSelector{Selector: sel}
	var revisions appsv1.ControllerRevisionList
	if err := r.client.List(ctx, &revisions, inNS, bySel); err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions: %w", err)
	}
	if update, current := control.DaemonSetUpdateRevision(ds, revisions.Items); !current || update != revision {
		ctrl.LoggerFrom(ctx).V(4).Info("Waiting for the batch revision to be the DaemonSet's current one", "revision", revision)
		return nil, nil
	}
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, inNS, bySel); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	own, replacing := r.deleting.settle(client.ObjectKeyFromObject(ds), ownPods(ds, pods.Items), revision, r.clock.Now())
	return &choice{
		Pods:            own,
		Replacing:       replacing,
		Revision:        revision,
		Desired:         ds.Status.DesiredNumberScheduled,
		Partition:       partition,
		MaxUnavailable:  maxUnavailable(ds),
		MinReadySeconds: ds.Spec.MinReadySeconds,
		Now:             r.clock.Now(),
	}, nil
}

// ownPods keeps the pods ds controls and that are not being deleted.
func ownPods(ds *appsv1.DaemonSet, pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOfNoCopy(&p); ref != nil && ref.UID == ds.UID && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// maxUnavailable is the DaemonSet's rollingUpdate.maxUnavailable scaled to its desired pods (rounded up, as
// the DaemonSet controller does), 1 when unset, and at least 1 so a batch can always progress.
func maxUnavailable(ds *appsv1.DaemonSet) int32 {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.MaxUnavailable == nil {
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, int(ds.Status.DesiredNumberScheduled), true)
	if err != nil || n < 1 {
		return 1
	}
	return int32(min(n, 1<<31-1)) //nolint:gosec // clamped
}

func (r *Reconciler) deletePods(ctx context.Context, ds *appsv1.DaemonSet, doomed []corev1.Pod) error {
	for i := range doomed {
		p := &doomed[i]
		ctrl.LoggerFrom(ctx).V(2).Info("Deleting pod for the batch", "Pod", klog.KObj(p))
		r.deleting.expect(client.ObjectKeyFromObject(ds), p, r.clock.Now())
		err := r.client.Delete(ctx, p, client.Preconditions{UID: &p.UID})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			r.deleting.drop(client.ObjectKeyFromObject(ds), p.UID)
			return fmt.Errorf("deleting pod %s: %w", p.Name, err)
		}
		r.recorder.Eventf(ds, p, corev1.EventTypeNormal, "SuccessfulDelete", "DeletePod",
			"Deleted pod %s of revision %s for the batch release", p.Name,
			p.Labels[rolloutsv1beta1.ControllerRevisionHashLabelKey])
	}
	return nil
}
