package imagejob

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
)

// ListJobControllerName names the ImageListPullJob controller, its logs and the source of its events (upstream's).
const ListJobControllerName = "imagelistpulljob-controller"

// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagelistpulljobs,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagelistpulljobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagelistpulljobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagepulljobs,verbs=get;list;watch;create;delete

// ListJobReconciler reconciles ImageListPullJobs: one ImagePullJob per image, which the garbage collector deletes
// with the list.
type ListJobReconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events; start and completion times
	// and the TTL read Clock. They default to the manager's and the real clock.
	reconcilerdeps.Deps
	// Workers is the number of concurrent reconciles; 0 means 3.
	Workers int

	expectations *expectations.Expectations
}

// SetupWithManager registers the controller: it watches ImageListPullJobs and the ImagePullJobs they control.
func (r *ListJobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Default(mgr, ListJobControllerName)
	r.expectations = expectations.New(r.Clock, expectationsTTL)
	workers := r.Workers
	if workers <= 0 {
		workers = 3
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ListJobControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&kruiseappsv1alpha1.ImageListPullJob{}).
		Owns(&kruiseappsv1alpha1.ImagePullJob{}).
		Complete(r)
}

// Reconcile runs one step of an ImageListPullJob: the ImagePullJobs it creates and deletes and its status while
// it runs, its deletion once its TTL after finishing has passed.
func (r *ListJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &kruiseappsv1alpha1.ImageListPullJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, job); err != nil || job.DeletionTimestamp != nil {
		r.expectations.Forget(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if job.Status.CompletionTime != nil {
		return r.afterFinish(ctx, job)
	}
	children, err := r.children(ctx, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait := expectations.Wait(r.expectations, req.NamespacedName, children); wait > 0 {
		return ctrl.Result{RequeueAfter: min(wait, time.Second)}, nil
	}
	d := plan.DecideList(plan.ListInput{Now: r.Clock.Now(), Job: job, Children: children})
	ctrl.LoggerFrom(ctx).V(1).Info("Decided", "create", len(d.Create), "delete", len(d.Delete), "completed", d.Status.Completed)
	// The status goes first: a decision made on a stale copy of the job conflicts there, before it acts.
	if !equality.Semantic.DeepEqual(job.Status, d.Status) {
		if err := statuspatch.WriteLocked(ctx, r.Client, job, job.Status, d.Status); err != nil {
			return staleOr(err)
		}
	}
	for _, e := range d.Events {
		r.Recorder.Eventf(job, nil, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
	return ctrl.Result{}, errors.Join(r.create(ctx, job, d.Create), r.delete(ctx, job, d.Delete))
}

func (r *ListJobReconciler) afterFinish(ctx context.Context, job *kruiseappsv1alpha1.ImageListPullJob) (ctrl.Result, error) {
	del, wake := plan.AfterFinish(job.Spec.CompletionPolicy, job.Status.CompletionTime, r.Clock.Now())
	if !del {
		return ctrl.Result{RequeueAfter: wake}, nil
	}
	err := r.Client.Delete(ctx, job, client.Preconditions{UID: &job.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return ctrl.Result{}, fmt.Errorf("deleting the finished job: %w", err)
	}
	return ctrl.Result{}, nil
}

// children are the ImagePullJobs the list controls, those being deleted left out.
func (r *ListJobReconciler) children(ctx context.Context, job *kruiseappsv1alpha1.ImageListPullJob) ([]*kruiseappsv1alpha1.ImagePullJob, error) {
	list := &kruiseappsv1alpha1.ImagePullJobList{}
	if err := r.Client.List(ctx, list, client.InNamespace(job.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing ImagePullJobs: %w", err)
	}
	var out []*kruiseappsv1alpha1.ImagePullJob
	for i := range list.Items {
		c := &list.Items[i]
		if ref := metav1.GetControllerOfNoCopy(c); ref != nil && ref.UID == job.UID && c.DeletionTimestamp == nil {
			out = append(out, c)
		}
	}
	return out, nil
}

func (r *ListJobReconciler) create(ctx context.Context, job *kruiseappsv1alpha1.ImageListPullJob, children []*kruiseappsv1alpha1.ImagePullJob) error {
	var errs []error
	for _, c := range children {
		err := r.Client.Create(ctx, c)
		switch {
		case apierrors.IsAlreadyExists(err):
		case err != nil:
			r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, "FailedCreate", "Create", "Error creating ImagePullJob for %s: %v", c.Spec.Image, err)
			errs = append(errs, fmt.Errorf("creating the ImagePullJob of %s: %w", c.Spec.Image, err))
		default:
			r.expectations.Created(client.ObjectKeyFromObject(job), c.Name)
			r.Recorder.Eventf(job, c, corev1.EventTypeNormal, "SuccessfulCreate", "Create", "Created ImagePullJob %s for %s", c.Name, c.Spec.Image)
		}
	}
	return errors.Join(errs...)
}

func (r *ListJobReconciler) delete(ctx context.Context, job *kruiseappsv1alpha1.ImageListPullJob, children []*kruiseappsv1alpha1.ImagePullJob) error {
	var errs []error
	for _, c := range children {
		err := r.Client.Delete(ctx, c, client.Preconditions{UID: &c.UID})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("deleting ImagePullJob %s: %w", c.Name, err))
		default:
			r.expectations.Deleted(client.ObjectKeyFromObject(job), c.UID)
			r.Recorder.Eventf(job, c, corev1.EventTypeNormal, "SuccessfulDelete", "Delete", "Deleted ImagePullJob %s of %s", c.Name, c.Spec.Image)
		}
	}
	return errors.Join(errs...)
}
