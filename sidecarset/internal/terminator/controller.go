// Package terminator is the sidecar terminator (upstream OpenKruise's SidecarTerminator): once the main
// containers of a Job-like pod (restartPolicy Never or OnFailure) have finished, it stops the sidecars that
// ask for it (env KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT=true) through a ContainerRecreateRequest, which the
// node agent executes, so that the pod, and its Job, can finish. Planning is in ./plan.
//
// It reads pods from the manager's cache: the cache keeps whole every pod with such an env (podcache), so
// the env and container statuses are there even for the pods of Jobs, which the cache otherwise slims.
package terminator

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/flotilla-dev/flotilla/sidecarset/internal/terminator/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/eventbudget"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "sidecarterminator-controller"

// Event reasons: EventReason is upstream's, for the request made; the others are Flotilla's.
const (
	EventReason             = "SidecarTerminator"
	EventFailedTerminate    = "FailedTerminateSidecar"
	EventPodPhaseTerminated = "SidecarTerminatedPhase"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=pods/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps.kruise.io,resources=containerrecreaterequests,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler stops the sidecars of finished Job pods.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events. Both default to the manager's.
	Client   client.Client
	Recorder events.EventRecorder
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's --sidecarterminator-workers).
	Workers int
}

// SetupWithManager registers the controller. It looks only at pods that may need it: a sidecar env, a
// restart policy that lets the pod finish, sidecars not finished yet.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = eventbudget.New(mgr.GetEventRecorder(ControllerName))
	}
	workers := r.Workers
	if workers <= 0 {
		workers = 3
	}
	candidate := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		pod, ok := obj.(*corev1.Pod)
		return ok && plan.Candidate(pod)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&corev1.Pod{}, builder.WithPredicates(candidate)).
		Complete(r)
}

// Reconcile ends, when its main containers have finished, the pod's phase (for sidecars that ignore their
// exit code) or its sidecars.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	d := plan.Decide(pod)
	switch {
	case d.Phase != "":
		return ctrl.Result{}, r.endPhase(ctx, pod, d.Phase)
	case len(d.Stop) > 0:
		return ctrl.Result{}, r.stop(ctx, pod, d.Stop)
	}
	return ctrl.Result{}, nil
}

// stop asks the node agent, with the pod's one request, to stop the sidecars; a request already made is
// left to finish.
func (r *Reconciler) stop(ctx context.Context, pod *corev1.Pod, sidecars []string) error {
	key := client.ObjectKey{Namespace: pod.Namespace, Name: plan.RequestName(pod)}
	err := r.Client.Get(ctx, key, &kruiseappsv1alpha1.ContainerRecreateRequest{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	err = r.Client.Create(ctx, plan.Request(pod, sidecars))
	if apierrors.IsAlreadyExists(err) {
		return nil // made by an earlier reconcile that the cache does not show yet
	}
	countRequest(err)
	if err != nil {
		r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, EventFailedTerminate, "Terminate",
			"failed to create ContainerRecreateRequest %s to stop sidecars %v: %v", key.Name, sidecars, err)
		return fmt.Errorf("creating ContainerRecreateRequest %s: %w", key, err)
	}
	r.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, EventReason, "Terminate",
		"stopping sidecars %v of the finished job pod with ContainerRecreateRequest %s", sidecars, key.Name)
	return nil
}

// endPhase writes the pod's terminal phase from its main containers, with upstream's condition; the
// kubelet then stops what still runs, and keeps the phase.
func (r *Reconciler) endPhase(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase) error {
	status := corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{
		Type: plan.SidecarTerminatedCondition, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.Now(), Message: "Terminated by Sidecar Terminator",
	}}}
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	patch := client.RawPatch(types.StrategicMergePatchType, body)
	if err := r.Client.Status().Patch(ctx, pod, patch); err != nil {
		return fmt.Errorf("setting the phase of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	r.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, EventPodPhaseTerminated, "Terminate",
		"main containers finished: phase %s set before stopping the sidecars that ignore their exit code", phase)
	return nil
}
