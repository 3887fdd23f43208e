package imagepuller

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// ControllerName names the controller, its logs and the source of its events.
const ControllerName = "imagepuller-nodeagent"

// Upstream's event reasons; the note names the failure's class (Classify).
const (
	EventPullSucceeded = "PullImageSucceed"
	EventPullFailed    = "PullImageFailed"
)

// DefaultMaxParallel is the number of pulls in flight when Reconciler.MaxParallel is 0.
const DefaultMaxParallel = 5

// +kubebuilder:rbac:groups=apps.kruise.io,resources=nodeimages,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=nodeimages/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler pulls the images of its node's NodeImage.
type Reconciler struct {
	// NodeName is the agent's node, and the name of its NodeImage.
	NodeName string
	// Images is the node's runtime.
	Images cri.Images
	// Client reads the NodeImage from the cache and patches its status; Recorder records events. They
	// default to the manager's, Clock to the real clock.
	reconcilerdeps.Deps
	// APIReader reads pull secrets (never cached: the agent may only get them); it defaults to the manager's.
	APIReader client.Reader
	// MaxParallel bounds the pulls in flight: 0 means DefaultMaxParallel, less than 0 no bound.
	MaxParallel int

	mu sync.Mutex
	// tasks is the state of every pull task; cancels stops the attempts in flight.
	tasks   map[Key]Task
	cancels map[Key]context.CancelFunc
	// wake queues a reconcile when an attempt ends: the runtime sends no events.
	wake chan event.GenericEvent
}

// CacheByObject narrows the agent's cache to its node's NodeImage.
func CacheByObject(nodeName string) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{&kruiseappsv1alpha1.NodeImage{}: {
		Field: fields.OneTermEqualSelector("metadata.name", nodeName)}}
}

// SetupWithManager registers the puller. The manager's cache must be configured with CacheByObject.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.NodeName == "" || r.Images == nil {
		return fmt.Errorf("the image puller needs a node name and a container runtime")
	}
	r.setDefaults(mgr)
	// One worker: there is one NodeImage, and the plan must not run twice at once.
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		// Status changes are the agent's own writes; the spec is what it acts on.
		For(&kruiseappsv1alpha1.NodeImage{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, ControllerName)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.MaxParallel == 0 {
		r.MaxParallel = DefaultMaxParallel
	}
	r.tasks, r.cancels = map[Key]Task{}, map[Key]context.CancelFunc{}
	r.wake = make(chan event.GenericEvent, 1)
}

// Reconcile plans the node's pull tasks, starts and stops attempts, and writes the status they make.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Name != r.NodeName {
		return ctrl.Result{}, nil
	}
	ni := &kruiseappsv1alpha1.NodeImage{}
	if err := r.Client.Get(ctx, req.NamespacedName, ni); err != nil {
		if apierrors.IsNotFound(err) {
			r.stopAll()
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if ni.DeletionTimestamp != nil {
		r.stopAll()
		return ctrl.Result{}, nil
	}
	plan := r.apply(ctx, ni)
	for _, k := range plan.Failed {
		r.finished(nodeImageRef(ni), k, plan.Tasks[k], specTags(ni.Spec)[k].tag)
	}
	if err := r.writeStatus(ctx, ni, plan.Status); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// apply computes the plan under the lock and carries it out: cancels first, so that a restarted tag's old
// attempt never outlives the new one's start.
func (r *Reconciler) apply(ctx context.Context, ni *kruiseappsv1alpha1.NodeImage) Plan {
	r.mu.Lock()
	defer r.mu.Unlock()
	plan := Compute(Input{Spec: ni.Spec, Status: ni.Status, Tasks: r.tasks, Now: r.Clock.Now(), MaxRunning: r.MaxParallel})
	for _, k := range plan.Cancel {
		r.cancel(k)
	}
	r.tasks = plan.Tasks
	ref := nodeImageRef(ni)
	for _, s := range plan.Start {
		attemptCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.Timeout)
		r.cancels[s.Key] = cancel
		go r.run(attemptCtx, cancel, ref, s)
	}
	return plan
}

func (r *Reconciler) cancel(k Key) {
	if cancel, ok := r.cancels[k]; ok {
		cancel()
		delete(r.cancels, k)
	}
}

func (r *Reconciler) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.cancels {
		r.cancel(k)
	}
	r.tasks = map[Key]Task{}
}

// run performs one attempt and records how it ended.
func (r *Reconciler) run(ctx context.Context, cancel context.CancelFunc, ref *corev1.ObjectReference, s Start) {
	defer cancel()
	res := r.attempt(ctx, s)
	r.mu.Lock()
	t, ok := r.tasks[s.Key]
	var done bool
	if ok && t.Version == s.Tag.Version {
		t, done = Finish(t, s.Attempt, res, s.Tag, r.Clock.Now())
		r.tasks[s.Key] = t
	}
	r.mu.Unlock()
	if done {
		r.finished(ref, s.Key, t, s.Tag)
	}
	select {
	case r.wake <- event.GenericEvent{Object: &kruiseappsv1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: r.NodeName}}}:
	default: // a reconcile is queued already
	}
}

// writeStatus patches the status when it changed; a merge patch, so that the agent needs no update right.
func (r *Reconciler) writeStatus(ctx context.Context, ni *kruiseappsv1alpha1.NodeImage, st kruiseappsv1alpha1.NodeImageStatus) error {
	if equality.Semantic.DeepEqual(ni.Status, st) {
		return nil
	}
	next := ni.DeepCopy()
	next.Status = st
	if err := r.Client.Status().Patch(ctx, next, client.MergeFrom(ni)); err != nil {
		return fmt.Errorf("patching the status of NodeImage %s: %w", ni.Name, err)
	}
	return nil
}

func nodeImageRef(ni *kruiseappsv1alpha1.NodeImage) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "NodeImage", Name: ni.Name, UID: ni.UID}
}

// pullAction names the image in the event's action: the events.k8s.io broadcaster folds events of one
// reason and action about one object into a series that keeps only the first note, which would hide every
// image pulled after the first. An action is at most 128 characters.
func pullAction(k Key) string {
	a := "Pull " + k.String()
	if len(a) > 128 {
		a = a[:128]
	}
	return a
}

// finished counts a task that just finished, however it ended (an attempt's result, or the plan timing out
// its last attempt or stopping it at its deadline), and records its events: on the NodeImage, and for a
// failure also on the ImagePullJobs that asked for the tag, as upstream does.
func (r *Reconciler) finished(ref *corev1.ObjectReference, k Key, t Task, tag kruiseappsv1alpha1.ImageTagSpec) {
	countFinished(t)
	if t.Phase == kruiseappsv1alpha1.ImagePhaseSucceeded {
		r.Recorder.Eventf(ref, nil, corev1.EventTypeNormal, EventPullSucceeded, pullAction(k), "Image %s, elapsed time %v",
			k, t.CompletionTime.Sub(t.StartTime).Round(1e6))
		return
	}
	r.recordFailure(ref, k, t, tag)
}

func (r *Reconciler) recordFailure(ref *corev1.ObjectReference, k Key, t Task, tag kruiseappsv1alpha1.ImageTagSpec) {
	for i := range tag.OwnerReferences {
		r.Recorder.Eventf(&tag.OwnerReferences[i], nil, corev1.EventTypeWarning, EventPullFailed, pullAction(k),
			"Image %s on node %s: %s: %s", k, ref.Name, t.Reason, t.Message)
	}
	r.Recorder.Eventf(ref, nil, corev1.EventTypeWarning, EventPullFailed, pullAction(k), "Image %s: %s: %s", k, t.Reason, t.Message)
}
