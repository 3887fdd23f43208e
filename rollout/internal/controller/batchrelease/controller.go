// Package batchrelease runs BatchReleases: it moves a workload batch by batch through the WorkloadControl
// registered for its kind and rolling style, labels the pods of each batch and reports batch readiness.
package batchrelease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"
	"github.com/flotilla-dev/flotilla/rollout/internal/metrics"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// ControllerName is the controller's name in logs, metrics and events.
const ControllerName = "batchrelease-controller"

// Reconciler reconciles BatchReleases.
type Reconciler struct {
	Client   client.Client
	Controls *control.Registry
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	// Metrics, when set, counts batches that became ready.
	Metrics *metrics.Engine
	// Workers is the number of BatchReleases reconciled at once; 0 means 1.
	Workers int

	// pods reads the update revision's pods; the client when unset.
	pods *cacheindex.Pods
	sent sentLabels
	// written holds the resourceVersion each status write replaced, so that a reconcile never plans from a
	// cached BatchRelease older than its own last write (its next write would lose to a conflict).
	written reconcileutil.StaleVersions
	// counted throttles status writes that change nothing but the pod counters.
	counted reconcileutil.ProgressWrites
	// unobservedSince holds when each release began waiting for its workload's controller to observe a write.
	unobservedSince reconcileutil.Timestamps[types.UID]
	// released holds the leaving releases (leaving) that handed their workload back: their Completed status
	// is not written, and their deletion must not finalize again from a cache that does not show the
	// workload released yet (the patch would fail its control-info test, and be retried).
	released reconcileutil.Timestamps[types.UID]
	// waits spare a release the pod events of a batch that cannot be ready yet.
	waits readyWaits
	// watches watches the custom workload kinds BatchReleases name, once set up.
	watches *reconcileutil.DynamicWatches
}

// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=batchreleases,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=batchreleases/status;batchreleases/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets;replicasets;controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets;statefulsets;daemonsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller. Workloads are watched so that pod progress (which their own
// controllers fold into workload status) wakes the BatchRelease that controls them.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &rolloutsv1beta1.BatchRelease{}, workloadRefIndex, workloadRefKey); err != nil {
		return fmt.Errorf("indexing BatchReleases by workload: %w", err)
	}
	pods, err := cacheindex.IndexPods(mgr, podRevisionIndex, podRevisions)
	if err != nil {
		return err
	}
	r.pods = pods
	b := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		For(&rolloutsv1beta1.BatchRelease{}).
		Owns(&appsv1.Deployment{}).
		Watches(&appsv1.Deployment{}, r.releasesOf("Deployment")).
		Watches(&appsv1.StatefulSet{}, r.releasesOf("StatefulSet")).
		Watches(&appsv1.DaemonSet{}, r.releasesOf("DaemonSet")).
		Watches(&appsv1.ControllerRevision{}, r.releasesOfDaemonSetRevision(), builder.WithPredicates(reconcileutil.DaemonSetRevisions)).
		Watches(&corev1.Pod{}, r.podEvents(), builder.WithPredicates(podProgress))
	for kind, obj := range reconcileutil.ServedKruiseWorkloads(mgr.GetScheme(), mgr.GetRESTMapper()) {
		b = b.Watches(obj, r.releasesOf(kind))
	}
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	known := reconcileutil.WatchedWorkloadKinds(mgr.GetScheme(), mgr.GetRESTMapper())
	r.watches = reconcileutil.NewDynamicWatches(c, mgr.GetCache(), mgr.GetRESTMapper(), known, r.releasesOf)
	return nil
}

// workloadRefIndex indexes BatchReleases by the kind and name of their workload, so a workload event finds
// its releases without listing the namespace's.
const workloadRefIndex = "spec.workloadRef.kindName"

func workloadRefKey(obj client.Object) []string {
	ref := obj.(*rolloutsv1beta1.BatchRelease).Spec.WorkloadRef
	return []string{ref.Kind + "/" + ref.Name}
}

// releasesOf maps a workload of kind to the BatchRelease named in its control-info annotation and to the
// BatchReleases that reference it: finalizing removes control-info, and the BatchRelease must still hear
// when the released workload finishes rolling out. The kind comes from the watch: cached objects carry none.
func (r *Reconciler) releasesOf(kind string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		var out []reconcile.Request
		if owner, ok := control.ControlOwner(obj.GetAnnotations()); ok && owner.Kind == "BatchRelease" {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: owner.Name}})
		}
		return append(out, r.releasesReferencing(ctx, obj.GetNamespace(), kind, obj.GetName())...)
	})
}

// releasesOfDaemonSetRevision maps a native DaemonSet's ControllerRevision to the DaemonSet's releases, which read
// the DaemonSet's update revision from it.
func (r *Reconciler) releasesOfDaemonSetRevision() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return r.releasesReferencing(ctx, obj.GetNamespace(), "DaemonSet", reconcileutil.DaemonSetOfRevision(obj))
	})
}

// releasesReferencing are the unfinished BatchReleases of namespace ns whose workload is kind/name.
func (r *Reconciler) releasesReferencing(ctx context.Context, ns, kind, name string) []reconcile.Request {
	list := &rolloutsv1beta1.BatchReleaseList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ns), client.MatchingFields{workloadRefIndex: kind + "/" + name}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, br := range list.Items {
		if br.Status.Phase != rolloutsv1beta1.RolloutPhaseCompleted {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&br)})
		}
	}
	return out
}

// Reconcile runs one step of a BatchRelease.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	br := &rolloutsv1beta1.BatchRelease{}
	if err := r.Client.Get(ctx, req.NamespacedName, br); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !br.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(br, rolloutsv1beta1.BatchReleaseFinalizer) {
		r.counted.Forget(br.UID)
		r.unobservedSince.Forget(br.UID)
		r.released.Forget(br.UID)
		r.waits.forget(br.UID)
		return reconcile.Result{}, nil
	}
	if r.written.Stale(br) {
		return reconcile.Result{RequeueAfter: reconcileutil.StaleRecheck}, nil
	}
	if r.watches != nil {
		if err := r.watches.Ensure(br.Spec.WorkloadRef); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := reconcileutil.EnsureFinalizer(ctx, r.Client, br, rolloutsv1beta1.BatchReleaseFinalizer); err != nil {
		return reconcile.Result{}, err
	}
	ctl, err := r.Controls.For(r.Client, r.target(br))
	if err != nil {
		r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, "UnsupportedWorkload", "Reconcile", "%v", err)
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	if !r.released.Last(br.UID).IsZero() {
		br.Status = plan.Completed(br.Status)
	}
	d, err := r.decide(ctx, br, ctl)
	if err != nil {
		return reconcile.Result{}, r.fail(ctx, br, "Read", err)
	}
	logf.FromContext(ctx).V(1).Info("Planned", "uid", br.UID, "resourceVersion", br.ResourceVersion,
		"deleting", !br.DeletionTimestamp.IsZero(), "action", d.Action, "desiredUpdated", d.DesiredUpdated,
		"batchPartition", br.Spec.ReleasePlan.BatchPartition, "state", d.Status.CanaryStatus.CurrentBatchState)
	r.waits.planned(br.UID, d.ReadyWanted, d.Status.CanaryStatus.UpdatedReadyReplicas)
	if err := r.apply(ctx, br, ctl, &d); err != nil {
		return reconcileutil.RetryConflicts(err)
	}
	return reconcile.Result{RequeueAfter: d.RequeueAfter}, nil
}

func (r *Reconciler) podReader() *cacheindex.Pods {
	if r.pods == nil {
		return cacheindex.FromClient(r.Client, "")
	}
	return r.pods
}

func (r *Reconciler) target(br *rolloutsv1beta1.BatchRelease) control.Target {
	return control.Target{
		Namespace: br.Namespace,
		Ref:       br.Spec.WorkloadRef,
		Owner:     *metav1.NewControllerRef(br, rolloutsv1beta1.GroupVersion.WithKind("BatchRelease")),
		Plan:      br.Spec.ReleasePlan,
	}
}

// decide reads the workload, labels the current batch's pods and plans.
func (r *Reconciler) decide(ctx context.Context, br *rolloutsv1beta1.BatchRelease, ctl control.WorkloadControl) (plan.BatchDecision, error) {
	info, err := ctl.Read(ctx)
	if err != nil && !errors.Is(err, control.ErrWorkloadGone) {
		return plan.BatchDecision{}, fmt.Errorf("reading workload: %w", err)
	}
	world := plan.BatchWorld{
		Now: r.Clock.Now(), Generation: br.Generation, Plan: br.Spec.ReleasePlan,
		Deleting:        !br.DeletionTimestamp.IsZero(),
		RollbackInBatch: br.Annotations[rolloutsv1beta1.RollbackInBatchAnnotation] == "true",
	}
	_, world.BatchOnInitialize = ctl.(control.BatchInitializer)
	if info != nil {
		view, err := r.view(ctx, br, info)
		if err != nil {
			return plan.BatchDecision{}, err
		}
		world.Workload = view
	}
	return plan.PlanBatchRelease(br.Status, world), nil
}

func (r *Reconciler) view(ctx context.Context, br *rolloutsv1beta1.BatchRelease, info *control.WorkloadInfo) (*plan.WorkloadView, error) {
	v := &plan.WorkloadView{
		Replicas: info.Replicas, Updated: info.UpdatedReplicas, UpdatedReady: info.UpdatedReadyReplicas,
		StableRevision: info.StableRevision, UpdateRevision: info.UpdateRevision, Consistent: info.Consistent,
	}
	id := br.Spec.ReleasePlan.RolloutID
	if br.Status.Phase != rolloutsv1beta1.RolloutPhaseProgressing || info.UpdatedPods == nil || (id == "" && !info.PodsRecreated) {
		return v, nil
	}
	if info.PodsRecreated {
		// The pods read below are the whole count: a pod event need wake the release only once it may be ready.
		r.waits.reading(br.UID)
	}
	pods, err := updatedPods(ctx, r.podReader(), br.Namespace, info)
	if err != nil {
		return nil, err
	}
	if info.PodsRecreated {
		countPods(v, pods)
	}
	if id == "" {
		return v, nil
	}
	labelled, err := r.labelBatchPods(ctx, br, info, pods)
	v.Labelled = labelled
	return v, err
}

// countPods raises the workload's counts to what the pod cache shows: a new pod's Ready event reaches the
// BatchRelease before the workload's controller has counted it, which would otherwise delay every batch by
// that controller's status write.
func countPods(v *plan.WorkloadView, pods []*corev1.Pod) {
	var live, ready int32
	for _, pod := range pods {
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		live++
		if podcondition.IsReady(pod) {
			ready++
		}
	}
	v.Updated = max(v.Updated, live)
	v.UpdatedReady = max(v.UpdatedReady, ready)
}

// apply makes the decision's workload change, then writes status and events.
func (r *Reconciler) apply(ctx context.Context, br *rolloutsv1beta1.BatchRelease, ctl control.WorkloadControl, d *plan.BatchDecision) error {
	err := r.act(ctx, br, ctl, d)
	if errors.Is(err, control.ErrNotObserved) {
		return r.awaitObserved(ctx, br, d, err)
	}
	r.unobservedSince.Forget(br.UID)
	if apierrors.IsConflict(err) {
		// The workload changed since it was read: a routine race, retried at once from a fresh read.
		return err
	}
	if err != nil {
		return r.fail(ctx, br, actionName(d.Action), err)
	}
	if d.Event != "" && !ofRollout(br) {
		r.Recorder.Eventf(br, nil, corev1.EventTypeNormal, "Progressing", actionName(d.Action), "%s", d.Event)
	}
	if releasing(br, d.Status) {
		// The object goes with its finalizer: a last status write would be read by no one.
		return r.releaseFinalizer(ctx, br)
	}
	if leaving(br) && plan.GetCondition(br.Status.Conditions, plan.ConditionStalled) == nil {
		// A failure is still written (fail), and so is the write that clears it.
		if d.Status.Phase == rolloutsv1beta1.RolloutPhaseCompleted {
			r.released.Mark(br.UID, r.Clock.Now())
		}
		return nil
	}
	d.Status.Conditions = plan.RemoveCondition(d.Status.Conditions, plan.ConditionStalled)
	if wait := r.counted.Hold(br.UID, countersOnly(br.Status, d.Status), r.Clock.Now()); wait > 0 {
		d.RequeueAfter = plan.Soonest(d.RequeueAfter, wait)
		return nil
	}
	if err := r.patchStatus(ctx, br, d.Status); err != nil {
		return err
	}
	if d.BatchReady {
		r.Metrics.BatchReady()
	}
	return nil
}

// ofRollout: a Rollout created br and records each transition of its release, so br records only Warning
// events; a BatchRelease created by hand records Normal ones too.
func ofRollout(br *rolloutsv1beta1.BatchRelease) bool {
	owner := metav1.GetControllerOfNoCopy(br)
	return owner != nil && owner.Kind == "Rollout" && strings.HasPrefix(owner.APIVersion, rolloutsv1beta1.GroupVersion.Group+"/")
}

// leaving: br is a Rollout's, and deleted or given its finalizing plan (no batch partition). Its Rollout deletes
// it with that plan and waits for it to go, so its progress from then on would be read by no one; written,
// it would mostly meet a conflict with the deletion.
func leaving(br *rolloutsv1beta1.BatchRelease) bool {
	return ofRollout(br) && (!br.DeletionTimestamp.IsZero() || br.Spec.ReleasePlan.BatchPartition == nil)
}

// actionName is the event action of a decision; the API requires one, and a decision that only observed
// (a batch found ready) is a verification.
func actionName(a plan.BatchAction) string {
	if a == plan.ActionNone {
		return "Verify"
	}
	return string(a)
}

// ReasonWorkloadControlFailed is the reason of the Stalled condition a BatchRelease carries while its
// workload cannot be read or changed (a malformed annotation, a refused patch).
const ReasonWorkloadControlFailed = "WorkloadControlFailed"

// fail reports a workload control error as a Warning event and a Stalled condition, then returns it so the
// reconcile is retried with backoff.
func (r *Reconciler) fail(ctx context.Context, br *rolloutsv1beta1.BatchRelease, action string, err error) error {
	r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, "ReconcileFailed", action, "%v", err)
	st := br.Status.DeepCopy()
	cond := plan.NewCondition(plan.ConditionStalled, corev1.ConditionTrue, ReasonWorkloadControlFailed, err.Error())
	st.Conditions = plan.SetCondition(st.Conditions, cond, r.Clock.Now())
	if perr := r.patchStatus(ctx, br, *st); perr != nil {
		return errors.Join(err, perr)
	}
	return err
}

func (r *Reconciler) act(ctx context.Context, br *rolloutsv1beta1.BatchRelease, ctl control.WorkloadControl, d *plan.BatchDecision) error {
	switch d.Action {
	case plan.ActionInitialize:
		return ctl.Initialize(ctx)
	case plan.ActionInitializeBatch:
		// decide plans this action only for a control that is a BatchInitializer.
		return ctl.(control.BatchInitializer).InitializeBatch(ctx, batchOf(br, d))
	case plan.ActionUpgrade:
		return ctl.UpgradeBatch(ctx, batchOf(br, d))
	case plan.ActionFinalize:
		done, err := ctl.Finalize(ctx)
		if err != nil {
			return err
		}
		if done {
			d.Status = plan.Completed(d.Status)
			d.Event = "completed: the workload is released"
		} else {
			d.RequeueAfter = verifyInterval
		}
	}
	return nil
}

// batchOf is what the decision asks of the workload's batch.
func batchOf(br *rolloutsv1beta1.BatchRelease, d *plan.BatchDecision) control.Batch {
	return control.Batch{
		DesiredUpdated: d.DesiredUpdated,
		Share:          d.Share,
		Unmoved:        d.Unmoved,
		PodLabels:      control.BatchPodLabels(br.Spec.ReleasePlan.RolloutID, d.Status.CanaryStatus.CurrentBatch),
		Abort:          plan.CarriesAbort(br.Spec.ReleasePlan),
	}
}

// notObservedRetry is how soon an action waiting for the cache to show the control's own write is retried at
// first; the retry then backs off to a quarter of the time waited, up to notObservedRetryMax: what it waits for
// (a ReplicaSet's observedGeneration) wakes no release, and a thousand releases waiting on a busy
// kube-controller-manager polled it five times a second each.
const (
	notObservedRetry    = 200 * time.Millisecond
	notObservedRetryMax = 5 * time.Second
)

// observedRetry is how soon to look again after waiting waited for an observation.
func observedRetry(waited time.Duration) time.Duration {
	return min(max(waited/4, notObservedRetry), notObservedRetryMax)
}

// NotObservedPatience is how long a release waits, without a word, for a workload's controller to observe a
// write: kube-controller-manager takes milliseconds, so a longer wait means that controller is not running.
const NotObservedPatience = 30 * time.Second

// ReasonWorkloadNotObserved is the reason of the Stalled condition a BatchRelease carries while its workload's
// controller has not observed a write for longer than NotObservedPatience.
const ReasonWorkloadNotObserved = "WorkloadNotObserved"

// awaitObserved keeps the status as it was, so the action is planned again once the cache has caught up. Past
// NotObservedPatience it says so once, with a Warning event and a Stalled condition (which the Rollout shows),
// and keeps waiting: the condition goes with the first action that succeeds.
func (r *Reconciler) awaitObserved(ctx context.Context, br *rolloutsv1beta1.BatchRelease, d *plan.BatchDecision, err error) error {
	now := r.Clock.Now()
	since := r.unobservedSince.Last(br.UID)
	if since.IsZero() {
		d.RequeueAfter = notObservedRetry
		r.unobservedSince.Mark(br.UID, now)
		return nil
	}
	d.RequeueAfter = observedRetry(now.Sub(since))
	if now.Sub(since) < NotObservedPatience || stalledFor(br, ReasonWorkloadNotObserved) {
		return nil
	}
	msg := fmt.Sprintf("waited %s: %v", now.Sub(since).Round(time.Second), err)
	r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, ReasonWorkloadNotObserved, actionName(d.Action), "%s", msg)
	st := br.Status.DeepCopy()
	cond := plan.NewCondition(plan.ConditionStalled, corev1.ConditionTrue, ReasonWorkloadNotObserved, msg)
	st.Conditions = plan.SetCondition(st.Conditions, cond, now)
	return r.patchStatus(ctx, br, *st)
}

// stalledFor reports whether br carries Stalled=True for reason.
func stalledFor(br *rolloutsv1beta1.BatchRelease, reason string) bool {
	c := plan.GetCondition(br.Status.Conditions, plan.ConditionStalled)
	return c != nil && c.Status == corev1.ConditionTrue && c.Reason == reason
}

// verifyInterval is how soon a finalize that waits for the workload is looked at again.
const verifyInterval = plan.VerifyInterval

func (r *Reconciler) patchStatus(ctx context.Context, br *rolloutsv1beta1.BatchRelease, st rolloutsv1beta1.BatchReleaseStatus) error {
	if equality.Semantic.DeepEqual(br.Status, st) {
		return nil
	}
	// A full update guarded by resourceVersion: required status fields survive (a merge patch drops unchanged
	// zero values), and a write by someone else since the read is never overwritten.
	replaced := br.ResourceVersion
	br.Status = st
	if err := r.Client.Status().Update(ctx, br); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	r.written.Record(br.UID, replaced)
	r.counted.Mark(br.UID, r.Clock.Now())
	return nil
}

// releasing reports whether a deleted BatchRelease has released its workload (st is Completed), so that its
// finalizer goes.
func releasing(br *rolloutsv1beta1.BatchRelease, st rolloutsv1beta1.BatchReleaseStatus) bool {
	return !br.DeletionTimestamp.IsZero() && st.Phase == rolloutsv1beta1.RolloutPhaseCompleted
}

// releaseFinalizer lets a deleted BatchRelease go. The version it replaced is recorded like a status write's,
// so a reconcile from a cache that still shows the finalizer does not remove it again from an object gone.
func (r *Reconciler) releaseFinalizer(ctx context.Context, br *rolloutsv1beta1.BatchRelease) error {
	replaced := br.ResourceVersion
	if err := reconcileutil.RemoveFinalizer(ctx, r.Client, br, rolloutsv1beta1.BatchReleaseFinalizer); err != nil {
		return err
	}
	r.written.Record(br.UID, replaced)
	return nil
}
