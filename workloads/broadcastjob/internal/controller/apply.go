package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/broadcastjob/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/parallel"
	"github.com/flotilla-dev/flotilla/workloads/podmetrics"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
)

// podWorkers bounds the pod writes of one reconcile in flight at once.
const podWorkers = 32

// apply carries out the decision's pod deletions and creations.
func (r *Reconciler) apply(ctx context.Context, job *kruiseappsv1alpha1.BroadcastJob, d plan.Decision) error {
	return errors.Join(
		parallel.Each(d.Delete, podWorkers, func(p *corev1.Pod) error { return r.deletePod(ctx, job, p) }),
		r.createPods(ctx, job, d.Create))
}

// createPods creates a pod on each node in slow-start batches (1, 2, 4, ...) as kube's controllers do, so that
// a create that keeps failing (quota, admission) costs one call instead of hundreds.
func (r *Reconciler) createPods(ctx context.Context, job *kruiseappsv1alpha1.BroadcastJob, nodes []string) error {
	for batch := 1; len(nodes) > 0; batch *= 2 {
		n := min(batch, len(nodes))
		if err := parallel.Each(nodes[:n], podWorkers, func(node string) error { return r.createPod(ctx, job, node) }); err != nil {
			return err
		}
		nodes = nodes[n:]
	}
	return nil
}

func (r *Reconciler) createPod(ctx context.Context, job *kruiseappsv1alpha1.BroadcastJob, node string) error {
	p := plan.NewPod(job, node)
	err := r.Client.Create(ctx, p)
	podMetrics.Count(podmetrics.Create, err)
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, "FailedCreate", "Create", "Error creating: %v", err)
		return fmt.Errorf("create the pod of node %s: %w", node, err)
	}
	r.expectations.Created(client.ObjectKeyFromObject(job), p.Name)
	r.Recorder.Eventf(job, p, corev1.EventTypeNormal, "SuccessfulCreate", "Create", "Created pod: %s", p.Name)
	return nil
}

func (r *Reconciler) deletePod(ctx context.Context, job *kruiseappsv1alpha1.BroadcastJob, p *corev1.Pod) error {
	err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	podMetrics.Count(podmetrics.Delete, err)
	if err != nil {
		r.Recorder.Eventf(job, p, corev1.EventTypeWarning, "FailedDelete", "Delete", "Error deleting: %v", err)
		return fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	r.expectations.Deleted(client.ObjectKeyFromObject(job), p.UID)
	r.Recorder.Eventf(job, p, corev1.EventTypeNormal, "SuccessfulDelete", "Delete", "Deleted pod: %s", p.Name)
	return nil
}

// deleteJob deletes a job whose TTL after finishing has passed; the garbage collector deletes its pods.
func (r *Reconciler) deleteJob(ctx context.Context, job *kruiseappsv1alpha1.BroadcastJob) error {
	err := r.Client.Delete(ctx, job, client.Preconditions{UID: &job.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete the finished job: %w", err)
	}
	return nil
}

// writeStatus patches the job's status when the decision changed it. The patch holds the job's
// resourceVersion: a decision made on a stale copy of the job (one the cache had not yet shown the last status
// write in) conflicts instead of undoing that write.
func (r *Reconciler) writeStatus(ctx context.Context, job *kruiseappsv1alpha1.BroadcastJob, d plan.Decision) error {
	if equality.Semantic.DeepEqual(&job.Status, &d.Status) {
		return nil
	}
	return statuspatch.WriteLocked(ctx, r.Client, job, job.Status, d.Status)
}

// record records the decision's events about the job: they tell of transitions its written status shows.
func (r *Reconciler) record(job *kruiseappsv1alpha1.BroadcastJob, d plan.Decision) {
	for _, e := range d.Events {
		r.Recorder.Eventf(job, nil, e.Type, e.Reason, "Reconcile", "%s", e.Message)
	}
}
