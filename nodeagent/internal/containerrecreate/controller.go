// Package containerrecreate is the node agent's ContainerRecreateRequest executor. The agent's cache holds
// only the active requests of its own node (CacheByObject); requests are reconciled per pod, so that one
// request of a pod runs at a time (the others report Pending). A running request goes to Recreating, waits
// out the unready grace period the manager set up, then has its containers stopped through CRI one step at
// a time (preStop handler first; the kubelet restarts them) and completes once the manager's synced pod
// statuses show every container recreated and ready. Planning (Pick, Admit, PlanRecreate) is pure; this
// file reads, applies and writes.
package containerrecreate

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/podhandler"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// ControllerName names the controller, its logs and the source of its events.
const ControllerName = "containerrecreaterequest-nodeagent"

const (
	// defaultWorkers is the number of pods handled at once; a stop blocks its worker for the grace period.
	defaultWorkers = 8
	// recheck is how often an unfinished request is looked at again when nothing changes it: the runtime
	// (a container exiting, not yet found) sends the agent no events.
	recheck = 10 * time.Second
	// expectationsTTL bounds the wait for the cache to show the agent's own status writes.
	expectationsTTL = 30 * time.Second
)

// +kubebuilder:rbac:groups=apps.kruise.io,resources=containerrecreaterequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=containerrecreaterequests/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler executes the ContainerRecreateRequests of one node.
type Reconciler struct {
	// NodeName is the agent's node; requests of other nodes are never acted on.
	NodeName string
	// Runtime is the node's container runtime.
	Runtime cri.Runtime
	// Client reads requests from the cache and writes their status; Recorder records events, without the
	// event budget (setDefaults). They default to the manager's, Clock to the real clock.
	reconcilerdeps.Deps
	// APIReader reads pods past the cache; it defaults to the manager's.
	APIReader client.Reader
	// HTTPClient runs httpGet preStop handlers; the default does not verify certificates, as the kubelet.
	HTTPClient *http.Client
	// Workers is the number of pods handled at once; 0 means 8.
	Workers int

	// expectations hold the agent's own status writes per pod until the cache shows them.
	expectations *expectations.Expectations
}

// CacheByObject narrows the agent's cache to the active requests of its node: the agent never lists the
// requests of other nodes nor finished ones.
func CacheByObject(nodeName string) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{&kruiseappsv1alpha1.ContainerRecreateRequest{}: {Label: labels.SelectorFromSet(labels.Set{
		kruiseappsv1alpha1.ContainerRecreateRequestNodeNameKey: nodeName,
		kruiseappsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	})}}
}

// SetupWithManager registers the executor. The manager's cache must be configured with CacheByObject.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.NodeName == "" || r.Runtime == nil {
		return fmt.Errorf("the ContainerRecreateRequest executor needs a node name and a container runtime")
	}
	r.setDefaults(mgr)
	workers := r.Workers
	if workers <= 0 {
		workers = defaultWorkers
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Watches(&kruiseappsv1alpha1.ContainerRecreateRequest{}, handler.EnqueueRequestsFromMapFunc(podKey)).
		Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	// No event budget, as this executor has always recorded: each event names the pod whose container it
	// stopped, and a request stops each of its containers once, so there is no burst to fold.
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	r.Default(mgr, ControllerName)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.HTTPClient == nil {
		r.HTTPClient = podhandler.NewHTTPClient()
	}
	r.expectations = expectations.New(r.Clock, expectationsTTL)
}

// podKey queues a request under its pod: all requests of a pod are handled by one reconcile.
func podKey(_ context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*kruiseappsv1alpha1.ContainerRecreateRequest)
	if !ok || c.Spec.PodName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Spec.PodName}}}
}

// Reconcile handles the requests of the pod req names: the others wait as Pending while one runs a step.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	crrs, err := r.requestsOf(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait := expectations.Wait(r.expectations, req.NamespacedName, crrs); wait > 0 {
		return ctrl.Result{RequeueAfter: min(wait, time.Second)}, nil
	}
	run, pending := Pick(crrs)
	for _, c := range pending {
		next := *c.Status.DeepCopy()
		next.Phase = phasePending
		if err := r.writeStatus(ctx, req.NamespacedName, c, next); err != nil {
			return ctrl.Result{}, err
		}
	}
	if run == nil {
		return ctrl.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("containerRecreateRequest", run.Name))
	wait, err := r.step(ctx, req.NamespacedName, run)
	return ctrl.Result{RequeueAfter: wait}, err
}

// requestsOf lists the cached requests of a pod. The label check repeats the cache's selection, so that a
// manager built without CacheByObject still never acts on another node's requests.
func (r *Reconciler) requestsOf(ctx context.Context, pod types.NamespacedName) ([]*crr, error) {
	list := &kruiseappsv1alpha1.ContainerRecreateRequestList{}
	if err := r.Client.List(ctx, list, client.InNamespace(pod.Namespace), client.MatchingLabels{
		kruiseappsv1alpha1.ContainerRecreateRequestNodeNameKey: r.NodeName,
		kruiseappsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}); err != nil {
		return nil, fmt.Errorf("listing ContainerRecreateRequests: %w", err)
	}
	var out []*crr
	for i := range list.Items {
		if list.Items[i].Spec.PodName == pod.Name {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// step moves the running request one step: start it, wait, or look at the runtime and stop one container.
func (r *Reconciler) step(ctx context.Context, pod types.NamespacedName, c *crr) (time.Duration, error) {
	adm := Admit(c, r.Clock.Now())
	if !adm.Ready {
		ctrl.LoggerFrom(ctx).V(1).Info("Request not ready", "reason", adm.Reason, "wait", adm.Wait)
		if adm.Status != nil {
			return 0, r.writeStatus(ctx, pod, c, *adm.Status)
		}
		return shorter(adm.Wait, recheck), nil
	}
	containers, err := cri.PodContainers(ctx, r.Runtime, c.Labels[kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey])
	if err != nil {
		return 0, fmt.Errorf("reading the pod's containers from the runtime: %w", err)
	}
	p := PlanRecreate(Input{CRR: c, Containers: containers, Now: r.Clock.Now()})
	if p.Stop != nil {
		outcome, err := r.stop(ctx, c, *p.Stop)
		if err != nil {
			return 0, err
		}
		p.Stopped(c, outcome, r.Clock.Now())
	}
	if err := r.writeStatus(ctx, pod, c, p.Status); err != nil {
		return 0, err
	}
	if p.Status.Phase == phaseCompleted {
		return 0, nil
	}
	return shorter(p.Wait, recheck), nil
}

// writeStatus patches the request's status subresource with the difference to next. A status patch leaves
// the metadata alone, so the manager's annotation writes meanwhile are never lost.
func (r *Reconciler) writeStatus(ctx context.Context, pod types.NamespacedName, c *crr, next crrStatus) error {
	if equality.Semantic.DeepEqual(c.Status, next) {
		return nil
	}
	patched := c.DeepCopy()
	patched.Status = next
	if err := r.Client.Status().Patch(ctx, patched, client.MergeFrom(c)); err != nil {
		return fmt.Errorf("patching the status of ContainerRecreateRequest %s: %w", c.Name, err)
	}
	r.expectations.Updated(pod, c.Name, patched.ResourceVersion)
	ctrl.LoggerFrom(ctx).V(1).Info("Wrote request status", "phase", next.Phase, "states", next.ContainerRecreateStates)
	countFinished(c.Status, next)
	if next.Phase == phaseCompleted && c.Status.Phase != phaseCompleted {
		r.recordCompleted(patched)
	}
	return nil
}

func (r *Reconciler) recordCompleted(c *crr) {
	eventType, note := corev1.EventTypeNormal, "Recreated all containers"
	if c.Status.Message != "" {
		eventType, note = corev1.EventTypeWarning, c.Status.Message
	}
	r.Recorder.Eventf(c, nil, eventType, reasonCompleted, "Complete", "%s", note)
}
