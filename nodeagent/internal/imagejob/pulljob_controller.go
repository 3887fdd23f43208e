// Package imagejob is the manager's ImagePullJob and ImageListPullJob controllers. An ImagePullJob writes its
// image's tag, with an owner reference to itself, into the NodeImages of the nodes it selects, as many at
// once as its parallelism allows; the node agents pull and report in the NodeImages' status, which the job
// counts. It copies its pull secrets where the agents read them, ends at completion or its deadline, takes
// its tags back and is deleted after its TTL. An ImageListPullJob keeps one ImagePullJob per image. Planning is
// in ./plan; this package gathers, applies and records.
package imagejob

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// PullJobControllerName names the controller, its logs and the source of its events (upstream's).
const PullJobControllerName = "imagepulljob-controller"

// expectationsTTL bounds how long a reconcile waits for the cache to show the controller's own writes.
const expectationsTTL = 30 * time.Second

// staleRetry is how soon a reconcile that lost a write race, or acted on a cache behind its own writes, looks
// again.
const staleRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagepulljobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagepulljobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagepulljobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps.kruise.io,resources=nodeimages,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// PullJobReconciler reconciles ImagePullJobs. It reads NodeImages through plan.OwnerIndex, which the NodeImage
// controller (nodeimagemanager) registers: set that up first.
type PullJobReconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events; deadlines, TTLs and tags'
	// creation times read Clock. They default to the manager's and the real clock.
	reconcilerdeps.Deps
	// Secrets reads pull secrets and their copies past the cache (the manager caches no Secrets, and reads
	// them only when a job starts nodes or ends); it defaults to the manager's API reader.
	Secrets client.Reader
	// ConfigNamespace is where pull secrets are copied for the node agents (upstream's kruise-daemon-config).
	ConfigNamespace string
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's --imagepulljob-workers).
	Workers int

	expectations *expectations.Expectations
}

// SetupWithManager registers the controller: it watches ImagePullJobs, the NodeImages (their statuses, and
// new or relabelled ones a job may select) and the pods of jobs with a podSelector.
func (r *PullJobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.ConfigNamespace == "" {
		return fmt.Errorf("setting up the ImagePullJob controller: no namespace to copy pull secrets to")
	}
	r.setDefaults(mgr)
	workers := r.Workers
	if workers <= 0 {
		workers = 3
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(PullJobControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&kruiseappsv1alpha1.ImagePullJob{}).
		Watches(&kruiseappsv1alpha1.NodeImage{}, r.nodeImageHandler()).
		Watches(&corev1.Pod{}, r.podHandler(), builder.WithPredicates(podPlacementChanged)).
		Complete(r)
}

func (r *PullJobReconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, PullJobControllerName)
	if r.Secrets == nil {
		r.Secrets = mgr.GetAPIReader()
	}
	r.expectations = expectations.New(r.Clock, expectationsTTL)
}

// Reconcile runs one step of an ImagePullJob: while it runs, the nodes it starts and its status; once it has
// finished or is deleted, taking back its tags and secret copies, and its deletion after its TTL.
func (r *PullJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &kruiseappsv1alpha1.ImagePullJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, job); err != nil {
		// The NodeImage controller drops the tags' references to a job that is gone.
		r.expectations.Forget(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if job.DeletionTimestamp != nil || plan.Finished(job) {
		return r.finish(ctx, job)
	}
	in, err := r.gather(ctx, job)
	if err != nil {
		return ctrl.Result{}, r.invalid(ctx, job, err)
	}
	if wait := expectations.Wait(r.expectations, req.NamespacedName, in.Selected); wait > 0 {
		return ctrl.Result{RequeueAfter: min(wait, time.Second)}, nil
	}
	d := plan.Decide(in)
	ctrl.LoggerFrom(ctx).V(1).Info("Decided", "selected", len(in.Selected), "activate", len(d.Activate),
		"active", d.Status.Active, "succeeded", d.Status.Succeeded, "failed", d.Status.Failed, "completed", d.Status.CompletionTime != nil)
	return r.run(ctx, job, in, d)
}

// run applies a decision: the job's finalizer and record of its active nodes first (a decision made on a
// stale copy of the job conflicts there, before it acts), then the nodes it starts, then its status.
func (r *PullJobReconciler) run(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob, in plan.Input, d plan.Decision) (ctrl.Result, error) {
	if err := r.writeMeta(ctx, job, d.Active); err != nil {
		return staleOr(err)
	}
	if err := r.activate(ctx, job, in, d.Activate); err != nil {
		return staleOr(err)
	}
	old := job.Status
	if err := r.writeStatus(ctx, job, d.Status); err != nil {
		return staleOr(err)
	}
	r.record(job, d.Events)
	if old.CompletionTime == nil && d.Status.CompletionTime != nil {
		countFinished(d)
	}
	return ctrl.Result{RequeueAfter: d.Wake}, nil
}

// finish takes back what a finished or deleted job spread: its tags in the NodeImages (their pulls stop), and
// its references to the copies of its pull secrets, before it lets the job go; a finished job is deleted once
// its ttlSecondsAfterFinished has passed.
func (r *PullJobReconciler) finish(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob) (ctrl.Result, error) {
	if err := r.release(ctx, job); err != nil {
		return staleOr(err)
	}
	if err := r.releaseSecrets(ctx, job); err != nil {
		return ctrl.Result{}, err
	}
	// A finished job plans no more: nothing waits for the cache to show these writes.
	r.expectations.Forget(client.ObjectKeyFromObject(job))
	if err := r.removeFinalizer(ctx, job); err != nil || job.DeletionTimestamp != nil {
		return staleOr(err)
	}
	del, wake := plan.AfterFinish(job.Spec.CompletionPolicy, job.Status.CompletionTime, r.Clock.Now())
	if del {
		return ctrl.Result{}, r.deleteJob(ctx, job)
	}
	return ctrl.Result{RequeueAfter: wake}, nil
}

// invalid reports a job the controller cannot act on (the webhook refuses such specs): in its status message
// and an event, without retrying until the job changes.
func (r *PullJobReconciler) invalid(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob, cause error) error {
	if !isSpecError(cause) {
		return cause
	}
	next := job.Status
	next.Message = "invalid spec: " + cause.Error()
	if err := r.writeStatus(ctx, job, next); err != nil {
		return err
	}
	r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, "InvalidSpec", "Reconcile", "%s", next.Message)
	return reconcile.TerminalError(cause)
}

// staleOr turns a lost write race into a quick retry and passes any other error on.
func staleOr(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	return ctrl.Result{}, err
}
