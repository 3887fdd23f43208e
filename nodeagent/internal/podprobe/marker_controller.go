// Package podprobe is the manager's side of the node agents' custom probes: the PodProbeMarker controller
// writes each marker's probes into the NodePodProbes of its pods' nodes, which the agents read, and the
// NodePodProbe controller keeps one NodePodProbe per node, drops the entries of pods that are gone, and turns
// the agents' results (the NodePodProbes' status) into pod conditions, labels and annotations. Planning is in
// ./plan; this package gathers, applies and records.
package podprobe

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/podprobe/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/eventbudget"
	"github.com/flotilla-dev/flotilla/workloads/parallel"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
)

// MarkerControllerName names the PodProbeMarker controller, its logs and the source of its events.
const MarkerControllerName = "podprobemarker-controller"

// MarkerIndex indexes NodePodProbes by the markers whose probes they hold (plan.MarkerKeys), so that a marker
// finds the nodes its pods left.
const MarkerIndex = "podprobe.flotilla.dev/markers"

// ReasonUnresolvedProbePort is the Warning event on a PodProbeMarker whose probe names a port (or container)
// a matched pod does not have: the probe is left out of that pod's entry.
const ReasonUnresolvedProbePort = "UnresolvedProbePort"

// nodeWorkers bounds the NodePodProbe writes of one reconcile in flight at once.
const nodeWorkers = 16

// +kubebuilder:rbac:groups=apps.kruise.io,resources=podprobemarkers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=podprobemarkers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=podprobemarkers/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps.kruise.io,resources=nodepodprobes,verbs=get;list;watch;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// MarkerReconciler reconciles PodProbeMarkers: their finalizer, their probes in the NodePodProbes of their
// pods' nodes, and their status. It reads NodePodProbes through MarkerIndex, which it registers.
type MarkerReconciler struct {
	// Client reads from the manager's cache and writes; APIReader reads a NodePodProbe past the cache after a
	// write conflict; Recorder records events. All default to the manager's.
	Client    client.Client
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's --podprobemarker-workers).
	Workers int

	writer specWriter
}

// SetupWithManager registers the controller: it watches PodProbeMarkers, the pods their selectors may match
// (a pod becoming eligible, leaving, changing its IP or labels) and the creation of NodePodProbes (a new node
// can hold the probes of pods already there).
func (r *MarkerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Client, r.APIReader, r.Recorder = withDefaults(mgr, r.Client, r.APIReader, r.Recorder, MarkerControllerName)
	r.writer = specWriter{client: r.Client, live: r.APIReader, controller: "podprobemarker"}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &kruiseappsv1alpha1.NodePodProbe{}, MarkerIndex, markerKeys); err != nil {
		return fmt.Errorf("indexing NodePodProbes by marker: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(MarkerControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers(r.Workers)}).
		For(&kruiseappsv1alpha1.PodProbeMarker{}, builder.WithPredicates(markerChanged)).
		Watches(&corev1.Pod{}, r.podHandler()).
		Watches(&kruiseappsv1alpha1.NodePodProbe{}, r.nodePodProbeHandler()).
		Complete(r)
}

// withDefaults fills in what a reconciler was not given from the manager: its cached client, its reader past
// the cache and, budgeted, its event recorder for the controller name.
func withDefaults(mgr ctrl.Manager, c client.Client, live client.Reader, rec events.EventRecorder, name string) (
	client.Client, client.Reader, events.EventRecorder) {
	if c == nil {
		c = mgr.GetClient()
	}
	if live == nil {
		live = mgr.GetAPIReader()
	}
	if rec == nil {
		rec = eventbudget.New(mgr.GetEventRecorder(name))
	}
	return c, live, rec
}

// workers is n, or upstream's 3 concurrent reconciles for 0.
func workers(n int) int {
	if n <= 0 {
		return 3
	}
	return n
}

func markerKeys(obj client.Object) []string {
	if npp, ok := obj.(*kruiseappsv1alpha1.NodePodProbe); ok {
		return plan.MarkerKeys(npp)
	}
	return nil
}

// Reconcile writes a PodProbeMarker's probes into the NodePodProbes of its pods' nodes and takes them out of
// the others, then its status; a deleted marker's probes are taken out of every NodePodProbe before its
// finalizer goes.
func (r *MarkerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ppm := &kruiseappsv1alpha1.PodProbeMarker{}
	if err := r.Client.Get(ctx, req.NamespacedName, ppm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ppm.DeletionTimestamp != nil {
		return staleOr(r.finalize(ctx, ppm))
	}
	if err := r.addFinalizer(ctx, ppm); err != nil {
		return staleOr(err)
	}
	pods, err := r.matching(ctx, ppm)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := plan.Want(ppm, pods)
	ctrl.LoggerFrom(ctx).V(1).Info("Planned", "matched", d.Matched, "nodes", len(d.ByNode), "skipped", len(d.Skipped))
	if err := r.write(ctx, ppm, d.ByNode); err != nil {
		return staleOr(err)
	}
	r.recordSkipped(ppm, d.Skipped)
	return staleOr(r.writeStatus(ctx, ppm, int64(d.Matched)))
}

// matching are the pods of the marker's namespace its selector matches, shared with the cache: read-only. A
// selector that does not parse (the webhook refuses it) ends the reconcile until the marker changes.
func (r *MarkerReconciler) matching(ctx context.Context, ppm *kruiseappsv1alpha1.PodProbeMarker) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(ppm.Spec.Selector)
	if err != nil {
		r.Recorder.Eventf(ppm, nil, corev1.EventTypeWarning, "InvalidSpec", "Reconcile", "spec.selector: %v", err)
		return nil, reconcile.TerminalError(fmt.Errorf("spec.selector: %w", err))
	}
	list := &corev1.PodList{}
	err = r.Client.List(ctx, list, client.InNamespace(ppm.Namespace), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, fmt.Errorf("listing the pods of the marker: %w", err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods, nil
}

// write makes each NodePodProbe hold the marker's probes of byNode: those of the nodes of its pods, and those
// that hold some of its probes (pods that left its selector, probes it no longer has).
func (r *MarkerReconciler) write(ctx context.Context, ppm *kruiseappsv1alpha1.PodProbeMarker, byNode map[string][]kruiseappsv1alpha1.PodProbe) error {
	holding, err := r.holding(ctx, ppm)
	if err != nil {
		return err
	}
	nodes := slices.Sorted(maps.Keys(byNode))
	for _, npp := range holding {
		if _, ok := byNode[npp.Name]; !ok {
			nodes = append(nodes, npp.Name)
		}
	}
	return parallel.Each(nodes, nodeWorkers, func(node string) error {
		npp := &kruiseappsv1alpha1.NodePodProbe{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: node}, npp); err != nil {
			// No NodePodProbe yet: its creation brings the marker back.
			return client.IgnoreNotFound(err)
		}
		return r.writer.update(ctx, npp, func(spec kruiseappsv1alpha1.NodePodProbeSpec) (kruiseappsv1alpha1.NodePodProbeSpec, bool) {
			return plan.WithMarker(spec, ppm.Namespace, ppm.Name, byNode[node])
		})
	})
}

// holding are the NodePodProbes the cache shows holding probes of the marker.
func (r *MarkerReconciler) holding(ctx context.Context, ppm *kruiseappsv1alpha1.PodProbeMarker) ([]kruiseappsv1alpha1.NodePodProbe, error) {
	list := &kruiseappsv1alpha1.NodePodProbeList{}
	err := r.Client.List(ctx, list, client.MatchingFields{MarkerIndex: plan.MarkerKey(ppm.Namespace, ppm.Name)}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, fmt.Errorf("listing the NodePodProbes of the marker: %w", err)
	}
	return list.Items, nil
}

// finalize takes a deleted marker's probes out of every NodePodProbe the cache shows holding them and out of
// those of its pods' nodes (the cache may not show a write just made there yet), then lets it go.
func (r *MarkerReconciler) finalize(ctx context.Context, ppm *kruiseappsv1alpha1.PodProbeMarker) error {
	if !controllerutil.ContainsFinalizer(ppm, kruiseappsv1alpha1.PodProbeMarkerFinalizer) {
		return nil
	}
	none := map[string][]kruiseappsv1alpha1.PodProbe{}
	if pods, err := r.matching(ctx, ppm); err == nil {
		for node := range plan.Want(ppm, pods).ByNode {
			none[node] = nil
		}
	}
	if err := r.write(ctx, ppm, none); err != nil {
		return err
	}
	next := ppm.DeepCopy()
	controllerutil.RemoveFinalizer(next, kruiseappsv1alpha1.PodProbeMarkerFinalizer)
	if err := r.Client.Patch(ctx, next, client.MergeFromWithOptions(ppm, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing the finalizer of PodProbeMarker %s/%s: %w", ppm.Namespace, ppm.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Took the probes of a deleted PodProbeMarker out of the NodePodProbes")
	return nil
}

// addFinalizer puts upstream's finalizer on the marker before any of its probes is written, and takes the
// written metadata back into ppm.
func (r *MarkerReconciler) addFinalizer(ctx context.Context, ppm *kruiseappsv1alpha1.PodProbeMarker) error {
	if controllerutil.ContainsFinalizer(ppm, kruiseappsv1alpha1.PodProbeMarkerFinalizer) {
		return nil
	}
	next := ppm.DeepCopy()
	controllerutil.AddFinalizer(next, kruiseappsv1alpha1.PodProbeMarkerFinalizer)
	if err := r.Client.Patch(ctx, next, client.MergeFromWithOptions(ppm, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding the finalizer of PodProbeMarker %s/%s: %w", ppm.Namespace, ppm.Name, err)
	}
	ppm.ObjectMeta = next.ObjectMeta
	return nil
}

// writeStatus records the matched pods and the generation they were written for, when that changed.
func (r *MarkerReconciler) writeStatus(ctx context.Context, ppm *kruiseappsv1alpha1.PodProbeMarker, matched int64) error {
	next := kruiseappsv1alpha1.PodProbeMarkerStatus{ObservedGeneration: ppm.Generation, MatchedPods: matched}
	if equality.Semantic.DeepEqual(ppm.Status, next) {
		return nil
	}
	return statuspatch.WriteLocked(ctx, r.Client, ppm, ppm.Status, next)
}

// recordSkipped says on the marker which probes its pods do not get, naming the first and how many more.
func (r *MarkerReconciler) recordSkipped(ppm *kruiseappsv1alpha1.PodProbeMarker, skipped []plan.Skipped) {
	if len(skipped) == 0 {
		return
	}
	more := ""
	if len(skipped) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(skipped)-1)
	}
	r.Recorder.Eventf(ppm, nil, corev1.EventTypeWarning, ReasonUnresolvedProbePort, "WriteNodePodProbe",
		"%s: left out of the pod's probes%s", skipped[0], more)
}

// selects reports whether the marker's selector matches a pod's labels.
func selects(ppm *kruiseappsv1alpha1.PodProbeMarker, podLabels map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(ppm.Spec.Selector)
	return err == nil && sel.Matches(labels.Set(podLabels))
}
