// Package launchpriority is the container launch priority controller: for each pod whose containers the
// pod webhook put behind a barrier (../../launchpriority), it keeps the barrier ConfigMap <pod>-barrier,
// adding the key of the next priority once the containers of the higher ones are ready, and marks the pod
// completed when the last key is in. The kubelet starts a container as soon as its key exists.
package launchpriority

import (
	"context"
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/flotilla-dev/flotilla/sidecarset/launchpriority"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/eventbudget"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "container-launch-priority-controller"

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// raceRetry is how soon a reconcile that lost a race for the barrier looks again.
const raceRetry = 100 * time.Millisecond

// Reconciler opens the launch barriers of pods.
type Reconciler struct {
	// Client reads pods from the manager's cache and writes; it defaults to the manager's.
	Client client.Client
	// Barriers reads barrier ConfigMaps; it defaults to the manager's API reader, since the manager caches
	// the ConfigMaps of its own namespace only.
	Barriers client.Reader
	// Recorder records events; it defaults to the manager's.
	Recorder events.EventRecorder
	// Workers is the number of concurrent reconciles; 0 means 4 (upstream's).
	Workers int
}

// SetupWithManager registers the controller: it watches the pods that wait on a barrier.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Barriers == nil {
		r.Barriers = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = eventbudget.New(mgr.GetEventRecorder(ControllerName))
	}
	workers := r.Workers
	if workers <= 0 {
		workers = 4
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(launching))).
		Complete(r)
}

// launching tells whether obj is a live pod whose launch is not completed yet.
func launching(obj client.Object) bool {
	pod, ok := obj.(*corev1.Pod)
	return ok && pod.DeletionTimestamp == nil && !launchpriority.Completed(pod) && launchpriority.HasBarrier(pod)
}

// Reconcile takes one pod's launch one step further.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil || !launching(pod) {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	barrier, err := r.barrier(ctx, pod)
	if err != nil {
		return retryOnRace(err)
	}
	step := launchpriority.Next(pod, barrier.Data)
	if step.Open != nil {
		if err := r.open(ctx, pod, barrier, *step.Open, step.Containers); err != nil {
			return retryOnRace(err)
		}
	}
	if step.Complete {
		return ctrl.Result{}, r.complete(ctx, pod)
	}
	return ctrl.Result{}, nil
}

// barrier is the pod's barrier ConfigMap; one without a resourceVersion when there is none yet.
func (r *Reconciler) barrier(ctx context.Context, pod *corev1.Pod) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := r.Barriers.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: launchpriority.BarrierName(pod.Name)}, cm)
	if apierrors.IsNotFound(err) {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: launchpriority.BarrierName(pod.Name),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}}}, nil
	}
	if err == nil && !ownedBy(cm, pod) {
		return nil, r.dropStale(ctx, cm)
	}
	return cm, err
}

// ownedBy tells whether the barrier belongs to this pod, not to an earlier pod of the same name.
func ownedBy(cm *corev1.ConfigMap, pod *corev1.Pod) bool {
	for _, ref := range cm.OwnerReferences {
		if ref.UID == pod.UID {
			return true
		}
	}
	return false
}

// errStale stands for a barrier of an earlier pod of the same name (a StatefulSet's pod recreated before
// the garbage collector removed it): its keys would release the new pod's containers at once, and its
// deletion later would hold them forever.
var errStale = errors.New("the barrier belongs to an earlier pod of the same name")

// dropStale deletes the barrier of an earlier pod, so the next reconcile creates the pod's own.
func (r *Reconciler) dropStale(ctx context.Context, cm *corev1.ConfigMap) error {
	err := r.Client.Delete(ctx, cm, client.Preconditions{UID: &cm.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return errStale
}

// retryOnRace requeues a reconcile that lost a race for the barrier (another worker or manager wrote it, or
// a stale one was just deleted).
func retryOnRace(err error) (ctrl.Result, error) {
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) || errors.Is(err, errStale) {
		return ctrl.Result{RequeueAfter: raceRetry}, nil
	}
	return ctrl.Result{}, err
}

// open adds the key of priority p to the barrier, creating it owned by the pod (the garbage collector
// deletes it with the pod), and records the release of containers.
func (r *Reconciler) open(ctx context.Context, pod *corev1.Pod, barrier *corev1.ConfigMap, p int, containers []string) error {
	key := launchpriority.Key(p)
	var err error
	if barrier.ResourceVersion == "" {
		barrier.Data = map[string]string{key: "true"}
		err = r.Client.Create(ctx, barrier)
	} else {
		patch := client.MergeFrom(barrier.DeepCopy())
		barrier.Data = mergeKey(barrier.Data, key)
		err = r.Client.Patch(ctx, barrier, patch)
	}
	count(opOpen, err)
	if err != nil {
		r.Recorder.Eventf(pod, barrier, corev1.EventTypeWarning, "FailedReleaseContainers", "Release",
			"failed to add %s to ConfigMap %s: %v", key, barrier.Name, err)
		return err
	}
	r.Recorder.Eventf(pod, barrier, corev1.EventTypeNormal, "ReleasedContainers", "Release",
		"launch priority %d released containers %s", p, strings.Join(containers, ", "))
	return nil
}

func mergeKey(data map[string]string, key string) map[string]string {
	if data == nil {
		data = map[string]string{}
	}
	data[key] = "true"
	return data
}

// complete sets the pod's completed annotation, as upstream does once its last key is in.
func (r *Reconciler) complete(ctx context.Context, pod *corev1.Pod) error {
	patch := client.MergeFrom(pod.DeepCopy())
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kruiseappspub.ContainerLaunchPriorityCompletedKey] = "true"
	err := client.IgnoreNotFound(r.Client.Patch(ctx, pod, patch))
	count(opComplete, err)
	return err
}
