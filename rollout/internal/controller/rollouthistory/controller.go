// Package rollouthistory records releases: for every release of a Rollout whose workload carries a
// rollout-id it keeps one RolloutHistory with snapshots of the objects involved and, once the release
// completes, the pods each step released. It runs behind the RolloutHistory feature gate.
package rollouthistory

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// ControllerName is the controller's name in logs, metrics and events.
const ControllerName = "rollouthistory-controller"

// Event reasons.
const (
	ReasonCreated   = "SuccessfulCreate"
	ReasonCompleted = "Completed"
)

// Reconciler records the releases of Rollouts.
type Reconciler struct {
	// Client reads Rollouts and histories from the cache and writes histories.
	Client client.Client
	// Reader reads from the apiserver: whether a history exists before creating one (the cache may not show
	// one created a moment ago), and the snapshots and pods, once per release, without starting informers.
	Reader   client.Reader
	Recorder events.EventRecorder
	// Suffix returns the random suffix of a new history's name; nil means 6 random lowercase alphanumerics.
	Suffix func() string
}

// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=rollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=rollouthistories,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=rollouthistories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups="",resources=services,verbs=get
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get
// +kubebuilder:rbac:groups=apps;apps.kruise.io,resources=deployments;statefulsets;daemonsets;clonesets,verbs=get

// SetupWithManager registers the controller; a nil Reader or Recorder is taken from the manager.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&rolloutsv1beta1.Rollout{}).
		Owns(&rolloutsv1alpha1.RolloutHistory{}).
		Complete(r)
}

// Reconcile creates or completes the history of the release a Rollout reports.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ro := &rolloutsv1beta1.Rollout{}
	if err := r.Client.Get(ctx, req.NamespacedName, ro); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	rel := releaseOf(ro)
	if rel.Stage == stageNone {
		return reconcile.Result{}, nil
	}
	h, err := r.findHistory(ctx, ro, rel)
	if err != nil {
		return reconcile.Result{}, err
	}
	switch decide(rel, h) {
	case actCreate:
		return reconcile.Result{}, r.create(ctx, ro, rel.ID)
	case actComplete:
		return retryConflicts(r.complete(ctx, ro, h, rel.ID))
	default:
		return reconcile.Result{}, nil
	}
}

// findHistory returns the history of the release, or nil. A history in the cache is trusted (a completed one
// never changes again; a stale status only makes the completing write conflict); an absence is checked with
// the apiserver before it leads to a create, so a slow cache never records a release twice.
func (r *Reconciler) findHistory(ctx context.Context, ro *rolloutsv1beta1.Rollout, rel release) (*rolloutsv1alpha1.RolloutHistory, error) {
	h, err := listHistory(ctx, r.Client, ro, rel.ID)
	if err != nil || h != nil || rel.Stage != stageRunning {
		return h, err
	}
	return listHistory(ctx, r.Reader, ro, rel.ID)
}

func listHistory(ctx context.Context, c client.Reader, ro *rolloutsv1beta1.Rollout, id string) (*rolloutsv1alpha1.RolloutHistory, error) {
	list := &rolloutsv1alpha1.RolloutHistoryList{}
	if err := c.List(ctx, list, client.InNamespace(ro.Namespace), client.MatchingLabels(historyLabels(ro.Name, id))); err != nil {
		return nil, fmt.Errorf("listing rollout histories: %w", err)
	}
	return pickHistory(list.Items, ro.UID), nil
}

// conflictRetry is how soon a reconcile whose write lost a race runs again.
const conflictRetry = 100 * time.Millisecond

func retryConflicts(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return reconcile.Result{}, err
}

func (r *Reconciler) suffix() string {
	if r.Suffix != nil {
		return r.Suffix()
	}
	return utilrand.String(6)
}

// create records the start of a release: the snapshots, read now, in a new history.
func (r *Reconciler) create(ctx context.Context, ro *rolloutsv1beta1.Rollout, id string) error {
	s, err := r.readSnapshots(ctx, ro)
	if err != nil {
		return err
	}
	h, err := newHistory(ro, id, historyName(ro.Name, r.suffix()), s)
	if errors.Is(err, errNotThisRelease) {
		// The Rollout's status lags the workload (or reports an id the workload does not carry): the next
		// status change brings the Rollout back here.
		ctrl.LoggerFrom(ctx).V(1).Info("Workload does not carry the release's rollout-id; not recorded", "rolloutID", id)
		return nil
	}
	if err != nil {
		return reconcile.TerminalError(err)
	}
	if err := r.Client.Create(ctx, h); err != nil {
		return fmt.Errorf("creating rollout history: %w", err)
	}
	r.Recorder.Eventf(ro, h, corev1.EventTypeNormal, ReasonCreated, "Record", "created rollout history %s for rollout-id %s", h.Name, id)
	return nil
}

// complete writes the pods of each step into the history and marks it completed, in one status update
// guarded by the history's resourceVersion.
func (r *Reconciler) complete(ctx context.Context, ro *rolloutsv1beta1.Rollout, h *rolloutsv1alpha1.RolloutHistory, id string) error {
	wl, err := r.readWorkload(ctx, ro)
	if err != nil || wl == nil {
		return err
	}
	pods, err := r.releasedPods(ctx, wl, id)
	if err != nil {
		return err
	}
	h = h.DeepCopy()
	h.Status = completedStatus(len(ro.Spec.Strategy.GetSteps()), pods)
	if err := r.Client.Status().Update(ctx, h); err != nil {
		return fmt.Errorf("completing rollout history %s: %w", h.Name, err)
	}
	r.Recorder.Eventf(ro, h, corev1.EventTypeNormal, ReasonCompleted, "Record", "completed rollout history %s for rollout-id %s", h.Name, id)
	ctrl.LoggerFrom(ctx).V(1).Info("Completed rollout history", "rolloutHistory", klog.KObj(h))
	return nil
}

func (r *Reconciler) releasedPods(ctx context.Context, wl *unstructured.Unstructured, id string) ([]corev1.Pod, error) {
	sel, err := podSelector(wl, id)
	if err != nil {
		return nil, err
	}
	pods := &corev1.PodList{}
	if err := r.Reader.List(ctx, pods, client.InNamespace(wl.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing released pods: %w", err)
	}
	return pods.Items, nil
}

// readSnapshots reads the workload and the traffic objects of the Rollout's first traffic routing.
func (r *Reconciler) readSnapshots(ctx context.Context, ro *rolloutsv1beta1.Rollout) (snapshots, error) {
	var s snapshots
	var err error
	if s.Workload, err = r.readWorkload(ctx, ro); err != nil {
		return s, err
	}
	names := routeNamesOf(ro)
	reads := []struct {
		gvk  schema.GroupVersionKind
		name string
		into **unstructured.Unstructured
	}{
		{corev1.SchemeGroupVersion.WithKind("Service"), names.Service, &s.Service},
		{schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, names.Ingress, &s.Ingress},
		{schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}, names.HTTPRoute, &s.HTTPRoute},
	}
	for _, rd := range reads {
		if *rd.into, err = r.readObject(ctx, rd.gvk, ro.Namespace, rd.name); err != nil {
			return s, err
		}
	}
	return s, nil
}

func (r *Reconciler) readWorkload(ctx context.Context, ro *rolloutsv1beta1.Rollout) (*unstructured.Unstructured, error) {
	ref := ro.Spec.WorkloadRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, reconcile.TerminalError(fmt.Errorf("workloadRef.apiVersion %q: %w", ref.APIVersion, err))
	}
	return r.readObject(ctx, gv.WithKind(ref.Kind), ro.Namespace, ref.Name)
}

// readObject reads an object from the apiserver; nil when the name is empty, the object does not exist or
// its kind is not served.
func (r *Reconciler) readObject(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	if name == "" || gvk.Kind == "" {
		return nil, nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s/%s: %w", gvk.Kind, ns, name, err)
	}
	return obj, nil
}
