package batchrelease

import (
	"context"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// podEvents wakes the releases a pod event concerns (podReleases). A pod that became Ready wakes a release
// whose batch waits for readiness only once enough pods have (readyWaits): each Ready pod of a batch of
// hundreds would otherwise cost a reconcile that reads every pod of the batch.
func (r *Reconciler) podEvents() handler.EventHandler {
	wake := func(ctx context.Context, pod client.Object, becameReady bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, br := range r.podReleases(ctx, pod) {
			if becameReady && !r.waits.wakes(br.UID) {
				continue
			}
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(br)})
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			wake(ctx, e.Object, false, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			wake(ctx, e.ObjectNew, becameReady(e.ObjectOld, e.ObjectNew), q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			wake(ctx, e.Object, false, q)
		},
	}
}

// becameReady: the update turned a live pod Ready.
func becameReady(before, after client.Object) bool {
	old, ok1 := before.(*corev1.Pod)
	pod, ok2 := after.(*corev1.Pod)
	return ok1 && ok2 && pod.DeletionTimestamp.IsZero() && !podcondition.IsReady(old) && podcondition.IsReady(pod)
}

// podReleases are the unfinished releases of a pod's workload (podWorkload) that the pod's event concerns
// (podConcerns); the cache's own objects, read-only. A batch is ready the moment its last pod is, and the
// workload's own status reports that only after its controller has caught up.
func (r *Reconciler) podReleases(ctx context.Context, pod client.Object) []*rolloutsv1beta1.BatchRelease {
	// Every pod event of the cluster passes here: the releases are read through the workload index without a
	// copy. Listing the namespace's instead made each event copy every release of it into a new slice, which
	// with a thousand releases in one namespace was half of what the manager allocated.
	owner := r.podWorkload(ctx, pod)
	if owner == nil {
		return nil
	}
	list := &rolloutsv1beta1.BatchReleaseList{}
	byWorkload := client.MatchingFields{workloadRefIndex: owner.Kind + "/" + owner.Name}
	if r.Client.List(ctx, list, client.InNamespace(pod.GetNamespace()), byWorkload, client.UnsafeDisableDeepCopy) != nil {
		return nil
	}
	var out []*rolloutsv1beta1.BatchRelease
	for i := range list.Items {
		br := &list.Items[i]
		if br.Status.Phase != rolloutsv1beta1.RolloutPhaseCompleted && podConcerns(br, pod) {
			out = append(out, br)
		}
	}
	return out
}

// podWorkload is the workload a pod belongs to: its controller, or for a ReplicaSet's pod the ReplicaSet's
// controller (read without a copy); nil for a pod with neither.
func (r *Reconciler) podWorkload(ctx context.Context, pod client.Object) *metav1.OwnerReference {
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil || owner.Kind != "ReplicaSet" {
		return owner
	}
	rs := &appsv1.ReplicaSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pod.GetNamespace(), Name: owner.Name}, rs, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	return metav1.GetControllerOfNoCopy(rs)
}

// podConcerns reports whether an event of pod, a pod of br's workload, can change what br plans. An old
// revision's pod going away cannot: a release counts the update revision's pods, and the workload's own
// controller reports the room a removed pod leaves. Skipping those halves the pod events of a release, since
// every old pod is marked deleted, then deleted. Anything else concerns br, and so does every pod while br
// has not recorded its update revision.
func podConcerns(br *rolloutsv1beta1.BatchRelease, pod client.Object) bool {
	update := br.Status.UpdateRevision
	if update == "" || pod.GetDeletionTimestamp() == nil {
		return true
	}
	labels := pod.GetLabels()
	return slices.ContainsFunc(revisionLabelKeys, func(key string) bool { return labels[key] == update })
}

// podProgress passes the pod events a release acts on: a new pod (to label, unless it was created with a
// rollout-id; a pod the cache lists Ready at start counts too), a pod going away, and a change of readiness.
// Label and status changes beside those (including the labels this controller writes) do not wake a release.
var podProgress = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool {
		pod, ok := e.Object.(*corev1.Pod)
		return !ok || pod.Labels[rolloutsv1beta1.RolloutIDLabel] == "" || podcondition.IsReady(pod)
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*corev1.Pod)
		after, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return false
		}
		return podcondition.IsReady(before) != podcondition.IsReady(after) ||
			before.DeletionTimestamp.IsZero() != after.DeletionTimestamp.IsZero()
	},
}

// readyWaits remembers, for each release whose batch waits for its pods to become Ready, how many updated
// pods must be Ready before the batch may be, how many were when the release last read its pods, and how many
// became Ready since. The release reads its pods again once enough may be. Kept in memory only: after a
// restart, every event wakes a release until it has planned once.
type readyWaits struct {
	mu sync.Mutex
	m  map[types.UID]*readyWait
}

type readyWait struct {
	// want is 0 while the release is reading its pods: every event wakes it then.
	want, ready, since int32
}

// reading starts counting afresh for a release about to read its pods: a pod that becomes Ready from now on
// counts, even if the read sees it already (it then wakes the release early, never late).
func (w *readyWaits) reading(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.UID]*readyWait{}
	}
	w.m[uid] = &readyWait{}
}

// planned records what a release that has read its pods waits for: want Ready pods of which ready were; want 0,
// no wait on readiness alone. It changes nothing for a release that did not read its pods.
func (w *readyWaits) planned(uid types.UID, want, ready int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.m[uid]
	switch {
	case e == nil:
	case want == 0:
		delete(w.m, uid)
	default:
		e.want, e.ready = want, ready
	}
}

// wakes counts a pod of the release that became Ready and reports whether the release should look.
func (w *readyWaits) wakes(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.m[uid]
	if e == nil {
		return true
	}
	e.since++
	return e.want == 0 || e.ready+e.since >= e.want
}

// forget drops a release's wait.
func (w *readyWaits) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, uid)
}
