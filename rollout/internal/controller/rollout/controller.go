// Package rollout runs Rollouts: it follows the workload a Rollout references, walks the release's steps,
// drives the BatchRelease named after the Rollout, and writes the status that kubectl-kruise, Argo CD and
// Flux read.
package rollout

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"
	"github.com/flotilla-dev/flotilla/rollout/internal/metrics"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// ControllerName is the controller's name in logs, metrics and events.
const ControllerName = "rollout-controller"

// Reconciler reconciles Rollouts.
type Reconciler struct {
	Client   client.Client
	Controls *control.Registry
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	// Metrics, when set, counts finished releases.
	Metrics *metrics.Engine
	// Workers is the number of Rollouts reconciled at once; 0 means 1.
	Workers int
	// written remembers, per Rollout, the resourceVersion its last status write replaced, so a reconcile
	// that reads that very version from a cache not caught up yet waits instead of acting on old status.
	written reconcileutil.StaleVersions
	// batchWritten does the same for its writes of the BatchRelease (the next batch, its deletion): a
	// reconcile from a cache without them would send them again and lose to a conflict.
	batchWritten reconcileutil.StaleVersions
	// progress spaces the status writes that only copy the BatchRelease's pod counters.
	progress reconcileutil.ProgressWrites
	// changes remembers the last network change of each Rollout, for its grace period.
	changes reconcileutil.NetworkChanges
	// KeepPausedOnDelete is the KeepWorkloadPausedOnRolloutDeletion gate: a Rollout deleted mid-release
	// leaves its workload as the last batch made it.
	KeepPausedOnDelete bool
	// Traffic builds the traffic routing providers of a Rollout; empty means none runs in this manager.
	Traffic *trafficrouting.Registry
	// AppendPodSelector is the gate of the same name: patchPodTemplateMetadata labels extend the canary
	// Service selector.
	AppendPodSelector bool
	// Analysis: the analysis module runs, so a RolloutAnalysis naming a Rollout gates its steps.
	Analysis bool
	// watches watches the custom workload kinds Rollouts name, once set up.
	watches *reconcileutil.DynamicWatches
}

// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=rollouts,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=rollouts/status;rollouts/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=batchreleases,verbs=get;list;watch;create;update;patch;delete

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &rolloutsv1beta1.Rollout{}, WorkloadRefIndex, WorkloadRefKey); err != nil {
		return fmt.Errorf("indexing Rollouts by workload: %w", err)
	}
	b := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		For(&rolloutsv1beta1.Rollout{}).
		Owns(&rolloutsv1beta1.BatchRelease{}).
		Watches(&appsv1.Deployment{}, r.rolloutsOf("Deployment"), builder.WithPredicates(deploymentChanged)).
		Watches(&appsv1.StatefulSet{}, r.rolloutsOf("StatefulSet")).
		Watches(&appsv1.DaemonSet{}, r.rolloutsOf("DaemonSet")).
		Watches(&appsv1.ControllerRevision{}, r.rolloutsOfDaemonSetRevision(), builder.WithPredicates(reconcileutil.DaemonSetRevisions))
	for kind, obj := range reconcileutil.ServedKruiseWorkloads(mgr.GetScheme(), mgr.GetRESTMapper()) {
		b = b.Watches(obj, r.rolloutsOf(kind))
	}
	b, err := r.watchAnalyses(mgr, b)
	if err != nil {
		return err
	}
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	known := reconcileutil.WatchedWorkloadKinds(mgr.GetScheme(), mgr.GetRESTMapper())
	r.watches = reconcileutil.NewDynamicWatches(c, mgr.GetCache(), mgr.GetRESTMapper(), known, r.rolloutsOf)
	return nil
}

// deploymentChanged passes Deployment events a Rollout reads: anything but an update of the status
// counters alone, which kube-controller-manager writes with every pod of a batch (the Rollout reads the
// spec, the metadata, observedGeneration and collisionCount; its BatchRelease counts the pods).
var deploymentChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*appsv1.Deployment)
		after, ok2 := e.ObjectNew.(*appsv1.Deployment)
		if !ok1 || !ok2 {
			return true
		}
		return before.ResourceVersion == after.ResourceVersion || before.Generation != after.Generation ||
			before.Status.ObservedGeneration != after.Status.ObservedGeneration ||
			!equality.Semantic.DeepEqual(before.Status.CollisionCount, after.Status.CollisionCount) ||
			!equality.Semantic.DeepEqual(before.Labels, after.Labels) ||
			!equality.Semantic.DeepEqual(before.Annotations, after.Annotations) ||
			!equality.Semantic.DeepEqual(before.Spec, after.Spec) ||
			!before.DeletionTimestamp.Equal(after.DeletionTimestamp)
	},
}

// rolloutsOf maps a workload of a kind to the Rollouts of its namespace that reference it. The kind comes
// from the watch: objects read from the cache carry no TypeMeta.
func (r *Reconciler) rolloutsOf(kind string) handler.EventHandler {
	// A workload event reads only the Rollouts that name it: listing the namespace's deep-copied every Rollout
	// for every event, which with a thousand Rollouts releasing at once was most of the manager's CPU.
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return append(r.rolloutsNaming(ctx, obj.GetNamespace(), kind, obj.GetName()), r.rolloutOfRelease(ctx, obj)...)
	})
}

// rolloutsNaming lists the Rollouts of ns whose workload is kind/name.
func (r *Reconciler) rolloutsNaming(ctx context.Context, ns, kind, name string) []reconcile.Request {
	list := &rolloutsv1beta1.RolloutList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ns), client.MatchingFields{WorkloadRefIndex: kind + "/" + name}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, ro := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ro)})
	}
	return out
}

// rolloutsOfDaemonSetRevision maps a native DaemonSet's ControllerRevision to the DaemonSet's Rollouts, which read
// the DaemonSet's update revision from it.
func (r *Reconciler) rolloutsOfDaemonSetRevision() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return r.rolloutsNaming(ctx, obj.GetNamespace(), "DaemonSet", reconcileutil.DaemonSetOfRevision(obj))
	})
}

// rolloutOfRelease maps a workload a BatchRelease controls (a canary Deployment) to that release's Rollout, which
// waits for the workload's controller to observe it.
func (r *Reconciler) rolloutOfRelease(ctx context.Context, obj client.Object) []reconcile.Request {
	owner := metav1.GetControllerOfNoCopy(obj)
	if owner == nil || owner.Kind != "BatchRelease" {
		return nil
	}
	br := &rolloutsv1beta1.BatchRelease{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: owner.Name}, br); err != nil {
		return nil
	}
	ro := metav1.GetControllerOfNoCopy(br)
	if ro == nil || ro.Kind != "Rollout" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: ro.Name}}}
}

// WorkloadRefIndex indexes Rollouts by the kind and name of their workload (WorkloadRefKey).
const WorkloadRefIndex = "spec.workloadRef.kindName"

// WorkloadRefKey is the index key of a Rollout: "<kind>/<name>" of its workload.
func WorkloadRefKey(obj client.Object) []string {
	ref := obj.(*rolloutsv1beta1.Rollout).Spec.WorkloadRef
	return []string{ref.Kind + "/" + ref.Name}
}

// Reconcile runs one step of a Rollout.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ro := &rolloutsv1beta1.Rollout{}
	if err := r.Client.Get(ctx, req.NamespacedName, ro); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.Releasing(req.NamespacedName, false)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.Stale(ro) {
		return reconcile.Result{RequeueAfter: reconcileutil.StaleRecheck}, nil
	}
	if err := r.watchWorkload(ro); err != nil {
		return reconcile.Result{}, err
	}
	if wrote, err := r.ensureMetadata(ctx, ro); err != nil || wrote {
		// The event of the write wakes the next reconcile, which starts from it.
		return reconcileutil.RetryConflicts(err)
	}
	obs, err := r.observe(ctx, ro)
	if errors.Is(err, errBatchBehind) {
		return reconcile.Result{RequeueAfter: reconcileutil.StaleRecheck}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	d := plan.ChainTraffic(plan.PlanRollout(ro.Status, obs.world), obs.world, func(st rolloutsv1beta1.RolloutStatus) *plan.TrafficObs {
		staged := *ro
		staged.Status = st
		return r.runTraffic(ctx, &staged, obs.workload)
	})
	logDecision(ctx, ro, obs.world, d)
	if err := r.apply(ctx, ro, obs, &d); err != nil {
		return reconcileutil.RetryConflicts(err)
	}
	return reconcile.Result{RequeueAfter: d.RequeueAfter}, nil
}

// watchWorkload makes sure the Rollout's workload kind is watched (a custom kind, on first sight).
func (r *Reconciler) watchWorkload(ro *rolloutsv1beta1.Rollout) error {
	if r.watches == nil {
		return nil
	}
	return r.watches.Ensure(ro.Spec.WorkloadRef)
}

// rollbackInBatch: the Rollout asks to roll back in batches and may, as upstream allows it only for
// CloneSets and StatefulSets (native or Advanced) without traffic routing.
func rollbackInBatch(ro *rolloutsv1beta1.Rollout) bool {
	kind := ro.Spec.WorkloadRef.Kind
	return ro.Annotations[rolloutsv1beta1.RollbackInBatchAnnotation] == "true" &&
		len(ro.Spec.Strategy.GetTrafficRoutings()) == 0 && (kind == "CloneSet" || kind == "StatefulSet")
}

// errBatchBehind: the cached BatchRelease is the version this controller's last write to it replaced.
var errBatchBehind = errors.New("the cache does not show the last write to the BatchRelease yet")

// observation is what one reconcile read.
type observation struct {
	world    plan.RolloutWorld
	workload *control.WorkloadInfo
	batch    *rolloutsv1beta1.BatchRelease
}

func (r *Reconciler) observe(ctx context.Context, ro *rolloutsv1beta1.Rollout) (observation, error) {
	obs := observation{world: plan.RolloutWorld{
		Now: r.Clock.Now(), Name: ro.Name, Namespace: ro.Namespace, Generation: ro.Generation, Spec: ro.Spec,
		Deleting:           !ro.DeletionTimestamp.IsZero(),
		NoTraffic:          len(ro.Spec.Strategy.GetTrafficRoutings()) == 0,
		KeepPausedOnDelete: r.KeepPausedOnDelete,
		TrafficUnavailable: len(ro.Spec.Strategy.GetTrafficRoutings()) > 0 && r.Traffic.Empty(),
		RollbackInBatch:    rollbackInBatch(ro),
	}}
	info, err := r.readWorkload(ctx, ro)
	if err != nil {
		return obs, err
	}
	if info != nil {
		obs.workload = info
		obs.world.Workload = workloadObs(info, ro.Name)
	}
	br, err := r.readBatch(ctx, ro)
	if err != nil {
		return obs, err
	}
	if br != nil && r.batchWritten.Stale(br) {
		// Before any traffic step runs: this reconcile ends here.
		return obs, errBatchBehind
	}
	if br != nil {
		obs.batch = br
		obs.world.Batch = plan.ObserveBatch(br)
	}
	if obs.world.Analysis, err = r.readAnalysis(ctx, ro, obs.batch); err != nil {
		return obs, err
	}
	obs.world.Traffic = r.runTraffic(ctx, ro, obs.workload)
	return obs, nil
}

func (r *Reconciler) readWorkload(ctx context.Context, ro *rolloutsv1beta1.Rollout) (*control.WorkloadInfo, error) {
	if ro.Spec.WorkloadRef.Name == "" {
		// Accepted as upstream accepts it: a Rollout that names no workload has none to release.
		return nil, nil
	}
	ctl, err := r.Controls.For(r.Client, control.Target{
		Namespace: ro.Namespace, Ref: ro.Spec.WorkloadRef,
		Plan: rolloutsv1beta1.ReleasePlan{
			RollingStyle:                 ro.Spec.Strategy.GetRollingStyle(),
			EnableExtraWorkloadForCanary: ro.Spec.Strategy.Canary != nil && ro.Spec.Strategy.Canary.EnableExtraWorkloadForCanary,
		},
	})
	if err != nil {
		r.Recorder.Eventf(ro, nil, corev1.EventTypeWarning, "UnsupportedWorkload", "Reconcile", "%v", err)
		return nil, reconcile.TerminalError(err)
	}
	info, err := ctl.Read(ctx)
	if errors.Is(err, control.ErrWorkloadGone) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading workload: %w", err)
	}
	return info, nil
}

func (r *Reconciler) readBatch(ctx context.Context, ro *rolloutsv1beta1.Rollout) (*rolloutsv1beta1.BatchRelease, error) {
	br := &rolloutsv1beta1.BatchRelease{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(ro), br)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(br, ro) {
		return nil, reconcile.TerminalError(fmt.Errorf("BatchRelease %s exists but is not owned by this Rollout", br.Name))
	}
	return br, nil
}

// logDecision records, at debug level, what a reconcile saw and decided; enough to replay a release.
func logDecision(ctx context.Context, ro *rolloutsv1beta1.Rollout, w plan.RolloutWorld, d plan.RolloutDecision) {
	log := ctrl.LoggerFrom(ctx).V(1)
	if !log.Enabled() {
		return
	}
	kv := []any{"resourceVersion", ro.ResourceVersion, "decision", d.Describe(), "events", d.Events}
	if wl := w.Workload; wl != nil {
		kv = append(kv, "updateRevision", wl.UpdateRevision, "stableRevision", wl.StableRevision,
			"inProgressing", wl.InProgressing, "consistent", wl.Consistent, "workloadGeneration", wl.Generation)
	}
	if b := w.Batch; b != nil {
		kv = append(kv, "batchReadyStep", b.ReadyStep, "batchCompleted", b.Completed)
	}
	if d.Plan != nil {
		kv = append(kv, "batchPartition", d.Plan.BatchPartition)
	}
	log.Info("Planned", append(kv, "deleteBatch", d.DeleteBatch)...)
}
