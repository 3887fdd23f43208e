package controller

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob/internal/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// controllerIndex indexes Jobs, BroadcastJobs and ImageListPullJobs by the name of the AdvancedCronJob
// controlling them.
const controllerIndex = "advancedcronjob.flotilla.dev/controller"

func indexChildren(mgr ctrl.Manager) error {
	for _, obj := range []client.Object{&batchv1.Job{}, &kruiseappsv1alpha1.BroadcastJob{}, &kruiseappsv1alpha1.ImageListPullJob{}} {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), obj, controllerIndex, controllerName); err != nil {
			return fmt.Errorf("indexing %T by controller: %w", obj, err)
		}
	}
	return nil
}

func controllerName(obj client.Object) []string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != kruiseappsv1alpha1.AdvancedCronJobKind || ref.APIVersion != kruiseappsv1alpha1.GroupVersion.String() {
		return nil
	}
	return []string{ref.Name}
}

// child is one controlled job with the planner's view of it.
type child struct {
	obj     client.Object
	kind    string
	planned plan.Child
}

type children []child

func (cs children) objects() []client.Object {
	out := make([]client.Object, len(cs))
	for i, c := range cs {
		out[i] = c.obj
	}
	return out
}

func (cs children) planned() []plan.Child {
	out := make([]plan.Child, len(cs))
	for i, c := range cs {
		out[i] = c.planned
	}
	return out
}

func (cs children) byUID() map[string]child {
	out := make(map[string]child, len(cs))
	for _, c := range cs {
		out[string(c.planned.UID)] = c
	}
	return out
}

// children lists the jobs of the template's kind the AdvancedCronJob controls. Jobs created by hand from
// its template (kubectl kruise create job --from) refer to it without controlling it: they are not its runs.
func (r *Reconciler) children(ctx context.Context, acj *kruiseappsv1alpha1.AdvancedCronJob) (children, error) {
	kind := plan.TemplateKind(&acj.Spec)
	list := newList(kind)
	if err := r.Client.List(ctx, list, client.InNamespace(acj.Namespace), client.MatchingFields{controllerIndex: acj.Name}); err != nil {
		return nil, fmt.Errorf("list %ss: %w", kind, err)
	}
	var out children
	err := apimeta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok {
			return fmt.Errorf("listed %T, not an object", o)
		}
		state, started := observe(obj)
		out = appendOwned(out, acj, obj, string(kind), state, started)
		return nil
	})
	return out, err
}

// newList is an empty list of the children of kind.
func newList(kind kruiseappsv1alpha1.TemplateKind) client.ObjectList {
	switch kind {
	case kruiseappsv1alpha1.JobTemplate:
		return &batchv1.JobList{}
	case kruiseappsv1alpha1.ImageListPullJobTemplate:
		return &kruiseappsv1alpha1.ImageListPullJobList{}
	default:
		return &kruiseappsv1alpha1.BroadcastJobList{}
	}
}

// observe reads a child's state and start time from its status.
func observe(obj client.Object) (plan.State, *metav1.Time) {
	switch o := obj.(type) {
	case *batchv1.Job:
		return jobState(o), o.Status.StartTime
	case *kruiseappsv1alpha1.BroadcastJob:
		return broadcastJobState(o), o.Status.StartTime
	case *kruiseappsv1alpha1.ImageListPullJob:
		return imageListPullJobState(o), o.Status.StartTime
	default:
		return plan.Running, nil
	}
}

// appendOwned adds obj when the AdvancedCronJob itself controls it, not an earlier one of the same name.
func appendOwned(out children, acj *kruiseappsv1alpha1.AdvancedCronJob, obj client.Object, kind string, state plan.State, started *metav1.Time) children {
	if ref := metav1.GetControllerOf(obj); ref == nil || ref.UID != acj.UID {
		return out
	}
	c := plan.Child{Name: obj.GetName(), UID: obj.GetUID(), State: state, Deleting: obj.GetDeletionTimestamp() != nil,
		ScheduledAt: plan.ParseScheduledAt(obj.GetAnnotations()[kruiseappsv1alpha1.ScheduledAtAnnotationKey])}
	if started != nil {
		c.StartTime = ptrTime(started.Time)
	}
	return append(out, child{obj: obj, kind: kind, planned: c})
}

func ptrTime(t time.Time) *time.Time { return &t }

// jobState reads a Job's Complete or Failed condition, as kube's CronJob controller does.
func jobState(j *batchv1.Job) plan.State {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return plan.Succeeded
		case batchv1.JobFailed:
			return plan.Failed
		}
	}
	return plan.Running
}

// broadcastJobState reads a BroadcastJob's Complete or Failed condition (upstream's reading), or its phase,
// which its controller sets together with them.
func broadcastJobState(j *kruiseappsv1alpha1.BroadcastJob) plan.State {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case kruiseappsv1alpha1.JobComplete:
			return plan.Succeeded
		case kruiseappsv1alpha1.JobFailed:
			return plan.Failed
		}
	}
	switch j.Status.Phase {
	case kruiseappsv1alpha1.PhaseCompleted:
		return plan.Succeeded
	case kruiseappsv1alpha1.PhaseFailed:
		return plan.Failed
	}
	return plan.Running
}

// imageListPullJobState reads an ImageListPullJob as upstream does: finished once its controller set
// completionTime (it does when every image's ImagePullJob finished, its deadline included), and Failed unless
// every image succeeded on every node: an image in failedImageStatuses, or fewer images succeeded than desired.
func imageListPullJobState(j *kruiseappsv1alpha1.ImageListPullJob) plan.State {
	switch {
	case j.Status.CompletionTime == nil:
		return plan.Running
	case len(j.Status.FailedImageStatuses) > 0 || j.Status.Succeeded < j.Status.Desired:
		return plan.Failed
	default:
		return plan.Succeeded
	}
}
