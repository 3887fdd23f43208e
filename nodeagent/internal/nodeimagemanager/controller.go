package nodeimagemanager

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob/plan"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/pernode"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// ControllerName names the controller and its logs (upstream's).
const ControllerName = "nodeimage-controller"

// DefaultCreationDelay is upstream's default --nodeimage-creation-delay.
const DefaultCreationDelay = 30 * time.Second

// conflictRetry is how soon a reconcile that lost a write race looks again.
const conflictRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=nodeimages,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagepulljobs,verbs=get;list;watch

// Reconciler keeps one NodeImage per node; requests are named after nodes.
type Reconciler struct {
	// Client reads from the manager's cache and writes; defaults to the manager's.
	Client client.Client
	// Clock defaults to the real clock.
	Clock clock.PassiveClock
	// CreationDelay is how long a node must have been Ready before its NodeImage is created; 0 means
	// DefaultCreationDelay.
	CreationDelay time.Duration
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's default).
	Workers int
}

// SetupWithManager registers the controller: NodeImages and nodes share their names, so both enqueue the
// same request; an ImagePullJob created or deleted enqueues the NodeImages whose tags name it (plan.OwnerIndex,
// which this registers on the manager's cache, for the ImagePullJob controller too).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.CreationDelay == 0 {
		r.CreationDelay = DefaultCreationDelay
	}
	workers := r.Workers
	if workers <= 0 {
		workers = 3
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &kruiseappsv1alpha1.NodeImage{}, plan.OwnerIndex, ownerKeys); err != nil {
		return fmt.Errorf("indexing NodeImages by owner: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&kruiseappsv1alpha1.NodeImage{}).
		Watches(&corev1.Node{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(pernode.NodeChanged)).
		Watches(&kruiseappsv1alpha1.ImagePullJob{}, handler.EnqueueRequestsFromMapFunc(r.nodeImagesOf), builder.WithPredicates(createdOrDeleted)).
		Complete(r)
}

func ownerKeys(obj client.Object) []string {
	if ni, ok := obj.(*kruiseappsv1alpha1.NodeImage); ok {
		return plan.OwnerKeys(ni)
	}
	return nil
}

// createdOrDeleted passes the ImagePullJob events that change which owners of a tag exist: a deletion, and a
// creation (a new job of a deleted one's name, whose UID the old references do not have).
var createdOrDeleted = predicate.Funcs{
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// nodeImagesOf are the NodeImages whose tags name the job.
func (r *Reconciler) nodeImagesOf(ctx context.Context, job client.Object) []ctrl.Request {
	list := &kruiseappsv1alpha1.NodeImageList{}
	key := job.GetNamespace() + "/" + job.GetName()
	if err := r.Client.List(ctx, list, client.MatchingFields{plan.OwnerIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the NodeImages of an ImagePullJob", "ImagePullJob", key)
		return nil
	}
	reqs := make([]ctrl.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return reqs
}

// Reconcile creates, deletes or tidies the NodeImage of the node req names.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return pernode.Reconcile(ctx, r.Client, req.NamespacedName, &kruiseappsv1alpha1.NodeImage{},
		pernode.Handlers[*kruiseappsv1alpha1.NodeImage]{Create: r.create, Tidy: r.tidy, Keep: isFake})
}

// goneOwners are the UIDs of the ImagePullJobs spec's tags name that the cache does not hold (deleted, or
// replaced by a new job of the name).
func (r *Reconciler) goneOwners(ctx context.Context, spec kruiseappsv1alpha1.NodeImageSpec) (map[types.UID]bool, error) {
	gone := map[types.UID]bool{}
	for _, img := range spec.Images {
		for _, tag := range img.Tags {
			for _, ref := range tag.OwnerReferences {
				if !plan.IsImagePullJob(ref) {
					continue
				}
				job := &kruiseappsv1alpha1.ImagePullJob{}
				err := r.Client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, job)
				switch {
				case apierrors.IsNotFound(err):
					gone[ref.UID] = true
				case err != nil:
					return nil, fmt.Errorf("reading ImagePullJob %s/%s: %w", ref.Namespace, ref.Name, err)
				case job.UID != ref.UID:
					gone[ref.UID] = true
				}
			}
		}
	}
	return gone, nil
}

// isFake tells a NodeImage with no node behind it on purpose (tests): the label's presence counts, as
// upstream reads it.
func isFake(ni *kruiseappsv1alpha1.NodeImage) bool {
	_, ok := ni.Labels[kruiseappsv1alpha1.FakeNodeImageLabelKey]
	return ok
}

// create makes the node's empty NodeImage once the node has been Ready for the creation delay. No owner
// reference, as upstream: the controller deletes it, and a fake one has no node to own it.
func (r *Reconciler) create(ctx context.Context, node *corev1.Node) (ctrl.Result, error) {
	ready, wait := pernode.ReadyFor(node, r.Clock.Now(), r.CreationDelay)
	if !ready {
		return ctrl.Result{}, nil
	}
	if wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	ni := &kruiseappsv1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: maps.Clone(node.Labels)}}
	if err := r.Client.Create(ctx, ni); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("creating NodeImage %s: %w", node.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created the NodeImage of a ready node")
	return ctrl.Result{}, nil
}

// tidy copies the node's labels onto its NodeImage, drops expired tags and the references to ImagePullJobs that
// are gone, as upstream does (a tag left without owners goes).
func (r *Reconciler) tidy(ctx context.Context, node *corev1.Node, ni *kruiseappsv1alpha1.NodeImage) (ctrl.Result, error) {
	next := ni.DeepCopy()
	if node != nil {
		next.Labels = maps.Clone(node.Labels)
	}
	spec, _, wait := Prune(ni, r.Clock.Now())
	gone, err := r.goneOwners(ctx, spec)
	if err != nil {
		return ctrl.Result{}, err
	}
	next.Spec, _ = plan.WithoutOwners(spec, func(ref corev1.ObjectReference) bool { return gone[ref.UID] })
	if equality.Semantic.DeepEqual(ni.Labels, next.Labels) && equality.Semantic.DeepEqual(ni.Spec, next.Spec) {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.Client.Update(ctx, next); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, fmt.Errorf("updating NodeImage %s: %w", ni.Name, err)
	}
	return ctrl.Result{RequeueAfter: wait}, nil
}
