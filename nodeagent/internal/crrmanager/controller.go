package crrmanager

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crradmission "github.com/flotilla-dev/flotilla/nodeagent/admission"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "containerrecreaterequest-controller"

// PodNameField indexes requests by spec.podName, so that a pod's events reach its requests, including those
// of an earlier pod of the same name.
const PodNameField = "spec.podName"

// conflictRetry is how soon a reconcile that lost a write race looks again.
const conflictRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups=apps.kruise.io,resources=containerrecreaterequests,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=apps.kruise.io,resources=containerrecreaterequests/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=containerrecreaterequests/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles ContainerRecreateRequests.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events. They default to the
	// manager's, Clock to the real clock.
	reconcilerdeps.Deps
	// APIReader reads past the cache; defaults to the manager's.
	APIReader client.Reader
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's default).
	Workers int
}

// SetupWithManager registers the controller: it watches requests and, through the spec.podName index,
// the pods they name.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	r.setDefaults(mgr)
	err := mgr.GetFieldIndexer().IndexField(ctx, &kruiseappsv1alpha1.ContainerRecreateRequest{}, PodNameField, podNameOf)
	if err != nil {
		return fmt.Errorf("indexing ContainerRecreateRequests by %s: %w", PodNameField, err)
	}
	workers := r.Workers
	if workers <= 0 {
		workers = 3
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&kruiseappsv1alpha1.ContainerRecreateRequest{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.requestsForPod)).
		Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, ControllerName)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
}

func podNameOf(obj client.Object) []string {
	crr, ok := obj.(*kruiseappsv1alpha1.ContainerRecreateRequest)
	if !ok || crr.Spec.PodName == "" {
		return nil
	}
	return []string{crr.Spec.PodName}
}

// requestsForPod maps a pod to the requests naming it that still need the pod: unfinished ones and those
// holding it not ready.
func (r *Reconciler) requestsForPod(ctx context.Context, pod client.Object) []reconcile.Request {
	list := &kruiseappsv1alpha1.ContainerRecreateRequestList{}
	err := r.Client.List(ctx, list, client.InNamespace(pod.GetNamespace()), client.MatchingFields{PodNameField: pod.GetName()})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the ContainerRecreateRequests of a pod", "pod", klog.KObj(pod))
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		crr := &list.Items[i]
		if !Finished(crr) || HasFinalizer(crr) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(crr)})
		}
	}
	return reqs
}

// Reconcile gets the request and its pod, plans and applies the plan.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	crr := &kruiseappsv1alpha1.ContainerRecreateRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, crr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	pod, err := crradmission.PodOf(ctx, r.Client, crr)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := Decide(crr, pod, r.Clock.Now())
	err = r.apply(ctx, crr, pod, p)
	switch {
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, nil // the request or its pod went meanwhile: that deletion brings the request back
	case err != nil:
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: p.RequeueAfter}, nil
}
