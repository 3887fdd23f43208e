package podprobe

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/pernode"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/podprobe/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// NodeControllerName names the NodePodProbe controller, its logs and the source of its events.
const NodeControllerName = "nodepodprobe-controller"

// VirtualKubeletLabel and VirtualKubeletValue mark a virtual node (upstream's "type: virtual-kubelet"): no
// node agent runs there, so it gets no NodePodProbe, as upstream's.
const (
	VirtualKubeletLabel = "type"
	VirtualKubeletValue = "virtual-kubelet"
)

// +kubebuilder:rbac:groups=apps.kruise.io,resources=nodepodprobes,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=apps.kruise.io,resources=podprobemarkers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// NodeReconciler keeps one NodePodProbe per ready node, named after it and deleted with it; drops the entries
// of pods that are gone and the probes of markers that are gone; and turns the node agent's results into pod
// conditions, labels and annotations. Requests are named after nodes.
type NodeReconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events. They default to the
	// manager's, Clock to the real clock.
	reconcilerdeps.Deps
	// APIReader reads a NodePodProbe past the cache after a write conflict; it defaults to the manager's.
	APIReader client.Reader
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's --nodepodprobe-workers).
	Workers int

	writer specWriter
}

// SetupWithManager registers the controller: NodePodProbes and nodes share their names, so both enqueue the
// same request; so do the pods of a NodePodProbe's entries (gone, done, relabelled) and the markers whose
// probes it holds (their policies changed).
func (r *NodeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Default(mgr, NodeControllerName)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.writer = specWriter{client: r.Client, live: r.APIReader, controller: "nodepodprobe"}
	return ctrl.NewControllerManagedBy(mgr).
		Named(NodeControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers(r.Workers)}).
		For(&kruiseappsv1alpha1.NodePodProbe{}, builder.WithPredicates(nodePodProbeChanged)).
		Watches(&corev1.Node{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(pernode.NodeChanged)).
		Watches(&corev1.Pod{}, r.podHandler()).
		Watches(&kruiseappsv1alpha1.PodProbeMarker{}, r.markerHandler(), builder.WithPredicates(markerChanged)).
		Complete(r)
}

// Reconcile creates, deletes or syncs the NodePodProbe of the node req names.
func (r *NodeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return pernode.Reconcile(ctx, r.Client, req.NamespacedName, &kruiseappsv1alpha1.NodePodProbe{},
		pernode.Handlers[*kruiseappsv1alpha1.NodePodProbe]{Create: r.create, Tidy: r.tidy})
}

// create makes the node's empty NodePodProbe once the node is Ready, as upstream's (no delay, no owner
// reference: the controller deletes it with the node).
func (r *NodeReconciler) create(ctx context.Context, node *corev1.Node) (ctrl.Result, error) {
	if ready, _ := pernode.ReadyFor(node, r.Clock.Now(), 0); !ready || node.Labels[VirtualKubeletLabel] == VirtualKubeletValue {
		return ctrl.Result{}, nil
	}
	npp := &kruiseappsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
	if err := r.Client.Create(ctx, npp); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("creating NodePodProbe %s: %w", node.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created the NodePodProbe of a ready node")
	return ctrl.Result{}, nil
}

// tidy syncs the NodePodProbe of a live node (one without its node is deleted, never kept).
func (r *NodeReconciler) tidy(ctx context.Context, _ *corev1.Node, npp *kruiseappsv1alpha1.NodePodProbe) (ctrl.Result, error) {
	return staleOr(r.sync(ctx, npp))
}

// sync drops the entries of pods that are gone and the probes of markers that are gone, then writes each
// remaining pod's results onto it.
func (r *NodeReconciler) sync(ctx context.Context, npp *kruiseappsv1alpha1.NodePodProbe) error {
	look := &lookup{ctx: ctx, c: r.Client, pods: map[types.NamespacedName]*corev1.Pod{}, markers: map[types.NamespacedName]*kruiseappsv1alpha1.PodProbeMarker{}}
	kept, changed := plan.Kept(npp.Spec, look.pod, look.markerExists)
	if look.err != nil {
		return look.err
	}
	if changed {
		err := r.writer.update(ctx, npp, func(spec kruiseappsv1alpha1.NodePodProbeSpec) (kruiseappsv1alpha1.NodePodProbeSpec, bool) {
			return plan.Kept(spec, look.pod, look.markerExists)
		})
		if err != nil || look.err != nil {
			return errors.Join(err, look.err)
		}
	}
	byUID := map[string]*corev1.Pod{}
	for _, e := range kept.PodProbes {
		byUID[e.UID] = look.pod(e.Namespace, e.Name)
	}
	var errs []error
	for _, st := range npp.Status.PodProbeStatuses {
		if pod := byUID[st.UID]; pod != nil {
			errs = append(errs, r.writeResults(ctx, pod, st, look))
		}
	}
	return errors.Join(append(errs, look.err)...)
}

// lookup reads the pods and markers of one sync from the cache, each once; the first error other than not
// found is kept in err, and reads as not found meanwhile.
type lookup struct {
	ctx     context.Context
	c       client.Reader
	pods    map[types.NamespacedName]*corev1.Pod
	markers map[types.NamespacedName]*kruiseappsv1alpha1.PodProbeMarker
	err     error
}

func (l *lookup) pod(ns, name string) *corev1.Pod {
	key := types.NamespacedName{Namespace: ns, Name: name}
	if p, ok := l.pods[key]; ok {
		return p
	}
	p, err := pernode.Get(l.ctx, l.c, key, &corev1.Pod{})
	l.keep(err)
	l.pods[key] = p
	return p
}

// marker is the marker of ns and name, nil when it is gone or being deleted.
func (l *lookup) marker(ns, name string) *kruiseappsv1alpha1.PodProbeMarker {
	key := types.NamespacedName{Namespace: ns, Name: name}
	m, ok := l.markers[key]
	if !ok {
		var err error
		m, err = pernode.Get(l.ctx, l.c, key, &kruiseappsv1alpha1.PodProbeMarker{})
		l.keep(err)
		l.markers[key] = m
	}
	if m == nil || m.DeletionTimestamp != nil {
		return nil
	}
	return m
}

// markerExists tells a marker the cache holds, being deleted or not: a deleted marker's controller takes its
// probes out itself.
func (l *lookup) markerExists(ns, name string) bool {
	l.marker(ns, name)
	return l.markers[types.NamespacedName{Namespace: ns, Name: name}] != nil
}

// probeOf is plan.ProbeOf for the markers of namespace ns.
func (l *lookup) probeOf(ns string) plan.ProbeOf {
	return func(marker, probe string) *kruiseappsv1alpha1.PodContainerProbe {
		m := l.marker(ns, marker)
		if m == nil {
			return nil
		}
		for i := range m.Spec.Probes {
			if m.Spec.Probes[i].Name == probe {
				return &m.Spec.Probes[i]
			}
		}
		return nil
	}
}

func (l *lookup) keep(err error) {
	if err != nil && l.err == nil {
		l.err = err
	}
}
