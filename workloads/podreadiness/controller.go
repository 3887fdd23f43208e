package podreadiness

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// ControllerName is the controller's name in logs and metrics.
const ControllerName = "pod-readiness-controller"

// conflictRetry is how soon a pod whose status write lost a race is looked at again.
const conflictRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch

// registered maps each manager the controller runs in to the kinds left to their own controllers, so that
// every workload module relying on the gate can call SetupWithManager.
var registered sync.Map

// SetupWithManager registers the controller that gives every pod declaring the KruisePodReady gate its
// condition, True, so that the gate does not keep a pod nobody holds not ready. Only pods that need it
// reach the work queue. Pods controlled by a kind in selfInitialising are left to that kind's controller,
// which writes the condition with the new pod's first status patch (and again until its cache shows it): a
// second writer would only race it, one conflict or one redundant write per pod. Calling it again with the
// same manager adds its kinds and sets up nothing more.
func SetupWithManager(mgr ctrl.Manager, selfInitialising ...schema.GroupKind) error {
	v, loaded := registered.LoadOrStore(mgr, &ownerKinds{kinds: map[schema.GroupKind]bool{}})
	owners := v.(*ownerKinds)
	owners.add(selfInitialising)
	if loaded {
		return nil
	}
	if err := setup(mgr, owners); err != nil {
		registered.Delete(mgr)
		return err
	}
	return nil
}

// ownerKinds is the set of controller kinds whose pods the controller leaves alone.
type ownerKinds struct {
	mu    sync.RWMutex
	kinds map[schema.GroupKind]bool
}

func (o *ownerKinds) add(kinds []schema.GroupKind) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, k := range kinds {
		o.kinds[k] = true
	}
}

// needsController: the pod lacks the condition and no controller of its own gives it one.
func (o *ownerKinds) needsController(pod *corev1.Pod) bool {
	if !NeedsCondition(pod) {
		return false
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return true
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	return !o.kinds[schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()]
}

func setup(mgr ctrl.Manager, owners *ownerKinds) error {
	r := &reconciler{client: mgr.GetClient(), clock: clock.RealClock{}}
	needs := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		pod, ok := obj.(*corev1.Pod)
		return ok && owners.needsController(pod)
	})
	err := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Pod{}, builder.WithPredicates(needs)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up %s: %w", ControllerName, err)
	}
	return nil
}

type reconciler struct {
	client client.Client
	clock  clock.PassiveClock
}

// Reconcile adds the missing condition with one status patch; the optimistic lock makes a stale cache lose
// the race instead of overwriting a condition written meanwhile.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := r.client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	before := pod.DeepCopy()
	if !InitCondition(pod, metav1.NewTime(r.clock.Now())) {
		return reconcile.Result{}, nil
	}
	patch := client.StrategicMergeFrom(before, client.MergeFromWithOptimisticLock{})
	err := r.client.Status().Patch(ctx, pod, patch)
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return reconcile.Result{}, nil
	case apierrors.IsConflict(err):
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	default:
		return reconcile.Result{}, fmt.Errorf("initialising the %s condition: %w", pub.KruisePodReadyConditionType, err)
	}
}
