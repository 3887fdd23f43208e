// Package controller holds the PersistentPodState module's controllers: the Recorder keeps each
// PersistentPodState's records of its StatefulSet's pods, the Generator keeps the PersistentPodStates that
// StatefulSets' annotations ask for. Planning is in ../plan; this package gathers and applies.
package controller

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/persistentpodstate/internal/plan"
)

// RecorderName names the recording controller and its logs (upstream's controller name).
const RecorderName = "persistentpodstate-controller"

// staleRetry is how soon a status write that lost a race looks again.
const staleRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups=apps.kruise.io,resources=persistentpodstates,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=persistentpodstates/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch

// Recorder keeps the records of PersistentPodStates.
type Recorder struct {
	// Client reads from the manager's cache (PersistentPodStates, StatefulSets, pods, nodes) and writes
	// statuses; it defaults to the manager's.
	Client client.Client
	// StartOrdinal: Advanced StatefulSets number their pods from spec.ordinals.start (the
	// StatefulSetStartOrdinal gate, as the statefulset module reads it).
	StartOrdinal bool
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's --persistentpodstate-workers).
	Workers int
}

// SetupWithManager registers the Recorder: it runs on a PersistentPodState's spec changes, on a pod of its
// StatefulSet turning Ready or being deleted, and on a change of the StatefulSet's spec or its deletion.
// TargetIndex must be registered.
func (r *Recorder) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	workers := r.Workers
	if workers <= 0 {
		workers = 3
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(RecorderName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&kruiseappsv1alpha1.PersistentPodState{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Pod{}, r.byPodController(), builder.WithPredicates(podRecordable())).
		Watches(&appsv1.StatefulSet{}, r.byStatefulSet(appsv1.SchemeGroupVersion.String()), builder.WithPredicates(specOrDeletion())).
		Watches(&kruiseappsv1beta1.StatefulSet{}, r.byStatefulSet(kruiseappsv1beta1.GroupVersion.String()),
			builder.WithPredicates(specOrDeletion())).
		Complete(r)
}

// Reconcile records the pods of one PersistentPodState's StatefulSet, writing the status when it changed.
func (r *Recorder) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pps := &kruiseappsv1alpha1.PersistentPodState{}
	if err := r.Client.Get(ctx, req.NamespacedName, pps); err != nil || pps.DeletionTimestamp != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	t, err := r.workload(ctx, pps.Namespace, pps.Spec.TargetReference)
	if err != nil {
		return ctrl.Result{}, err
	}
	pods, err := r.pods(ctx, pps.Namespace, t)
	if err != nil {
		return ctrl.Result{}, err
	}
	nodes, err := r.nodeLabels(ctx, pods)
	if err != nil {
		return ctrl.Result{}, err
	}
	next := plan.Status(pps, pps.Generation, t.Workload, pods, nodes)
	if equality.Semantic.DeepEqual(pps.Status, next) {
		return ctrl.Result{}, nil
	}
	return r.writeStatus(ctx, pps, next)
}

// writeStatus replaces the status whole (records that go must go from the map), from the version read.
func (r *Recorder) writeStatus(ctx context.Context, pps *kruiseappsv1alpha1.PersistentPodState,
	next kruiseappsv1alpha1.PersistentPodStateStatus) (ctrl.Result, error) {
	before := len(pps.Status.PodStates)
	pps.Status = next
	if err := r.Client.Status().Update(ctx, pps); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: staleRetry}, nil
		}
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Recorded pods", "before", before, "after", len(next.PodStates))
	return ctrl.Result{}, nil
}
