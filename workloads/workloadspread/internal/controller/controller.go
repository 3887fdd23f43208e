// Package controller is the WorkloadSpread controller: it reads the target workload's pods, derives each
// subset's status from them (../plan), sets the pod deletion costs that make scale-down empty the right
// subsets first, deletes the pods an Adaptive subset could not schedule, and writes the status, which the
// pod webhooks update too (Ledger). Planning is in ../plan; this package gathers, writes and records.
package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
	"github.com/flotilla-dev/flotilla/workloads/podclaim"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
	"github.com/flotilla-dev/flotilla/workloads/workloadref"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/internal/plan"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "workloadspread-controller"

// conflictRetry is how soon a reconcile whose status write lost a race (to the pod webhook) looks again.
const conflictRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups=apps.kruise.io,resources=workloadspreads,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=workloadspreads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments;replicasets;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles WorkloadSpreads.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events; the webhooks' entries
	// expire by Clock. They default to the manager's and the real clock.
	reconcilerdeps.Deps
	// KruiseWorkloads watches CloneSets and Advanced StatefulSets for their replicas (when they are served).
	KruiseWorkloads bool

	finder *workloadref.Finder
	pods   *cacheindex.Pods
}

// SetupWithManager registers the controller: it watches WorkloadSpreads, the pods they matched, and the
// replicas of their targets.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.setDefaults(mgr)
	pods, err := podclaim.IndexPods(mgr)
	if err != nil {
		return err
	}
	r.pods = pods
	b := ctrl.NewControllerManagedBy(mgr).Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: 3}).
		// Every change, status included: an entry the webhook recorded for a pod that is never created must
		// still be reconciled, to expire.
		For(&kruiseappsv1alpha1.WorkloadSpread{}).
		Watches(&corev1.Pod{}, podHandler())
	// The target kinds whose replicas are the base of percentages.
	targets := workloadref.Watch(r.KruiseWorkloads, workloadref.DeploymentKind, workloadref.ReplicaSetKind,
		workloadref.StatefulSetKind, workloadref.JobKind)
	for _, w := range targets {
		b = b.Watches(w.Object, r.workloadHandler(w.Kind), builder.WithPredicates(workloadref.ReplicasChanged(w.Replicas)))
	}
	return b.Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, ControllerName)
	r.finder = &workloadref.Finder{Client: r.Client}
}

// Reconcile derives one WorkloadSpread's status from its target's pods, sets their deletion costs, and
// wakes when an entry of the webhooks expires.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ws := &kruiseappsv1alpha1.WorkloadSpread{}
	if err := r.Client.Get(ctx, req.NamespacedName, ws); err != nil || ws.DeletionTimestamp != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	pods, replicas, found, err := r.gather(ctx, ws)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !found {
		r.Recorder.Eventf(ws, nil, corev1.EventTypeWarning, ReasonTargetNotFound, "Spread", "The target workload was not found")
	}
	out := plan.Status(plan.Input{WS: ws, Pods: pods, WorkloadReplicas: replicas, Now: r.Clock.Now()})
	if out.Invalid != "" {
		r.Recorder.Eventf(ws, nil, corev1.EventTypeWarning, ReasonInvalidSubset, "Spread", "The maxReplicas of subset %s cannot be read", out.Invalid)
		return ctrl.Result{}, nil
	}
	if err := r.apply(ctx, ws, pods, replicas, out); err != nil {
		return ctrl.Result{}, err
	}
	lost, err := r.writeStatus(ctx, ws, out.Status)
	switch {
	case lost:
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	// After the status: the unschedulable mark must be written before the pods that justify it go.
	return ctrl.Result{RequeueAfter: out.RequeueAfter}, r.reschedule(ctx, ws, out.Reschedule)
}
