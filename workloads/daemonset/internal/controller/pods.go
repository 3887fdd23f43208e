package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
	"github.com/flotilla-dev/flotilla/workloads/parallel"
	"github.com/flotilla-dev/flotilla/workloads/podmetrics"
	"github.com/flotilla-dev/flotilla/workloads/podwrite"
)

// podWorkers bounds the pod writes of one reconcile in flight at once.
const podWorkers = 16

// manage carries out the planned creates and deletes, at most burstReplicas of each.
func (r *Reconciler) manage(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, w *world, m plan.Manage) error {
	now := r.Clock.Now()
	for _, p := range m.Failed {
		node, _ := nodeplacement.TargetNode(p)
		r.failedPods.Next(backoffKey(ds, node), now)
		r.Recorder.Eventf(ds, p, corev1.EventTypeWarning, "FailedDaemonPod", "Delete",
			"Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, node)
	}
	burst := w.in.Strategy.Burst
	return errors.Join(
		failedAs(reasonFailedDelete, r.deletePods(ctx, ds, limit(m.Delete, burst))),
		failedAs(reasonFailedCreate, r.createPods(ctx, ds, w, limit(m.Create, burst))))
}

// update carries out a rolling update step: old pods replaced in place where the strategy and the change
// allow, else deleted; surging nodes' new pods created and their old pods deleted.
func (r *Reconciler) update(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, w *world, u plan.Update) error {
	burst := w.in.Strategy.Burst
	var recreate []*corev1.Pod
	var mu sync.Mutex
	inPlaceErr := eachPod(limit(u.Replace, burst), func(p *corev1.Pod) error {
		if spec, ok := r.inPlaceSpec(ds, w, p); ok {
			return r.updateInPlace(ctx, ds, w, p, spec)
		}
		mu.Lock()
		recreate = append(recreate, p)
		mu.Unlock()
		return nil
	})
	return errors.Join(failedAs(reasonFailedUpdate, inPlaceErr),
		failedAs(reasonFailedDelete, r.deletePods(ctx, ds, recreate)),
		failedAs(reasonFailedCreate, r.createPods(ctx, ds, w, limit(u.Create, burst))),
		failedAs(reasonFailedDelete, r.deletePods(ctx, ds, limit(u.Delete, burst))))
}

func limit[T any](items []T, n int) []T {
	return items[:min(len(items), max(n, 0))]
}

// createPods creates a pod of the update revision on each node, in slow-start batches (1, 2, 4, ...) as
// kube does, so that a create that keeps failing (quota, admission) costs one call instead of hundreds.
func (r *Reconciler) createPods(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, w *world, nodes []string) error {
	for batch := 1; len(nodes) > 0; batch *= 2 {
		n := min(batch, len(nodes))
		err := eachNode(nodes[:n], func(node string) error { return r.createPod(ctx, ds, w, node) })
		if err != nil {
			return err
		}
		nodes = nodes[n:]
	}
	return nil
}

// createPod creates the node's pod, then settles it: the conditions of its readiness gates, which nobody
// else would set before the pod readiness controller gets to it, so the kubelet can report it Ready at once.
func (r *Reconciler) createPod(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, w *world, node string) error {
	p := plan.NewPod(ds, w.in.Revision, w.in.Strategy.InPlace, node)
	err := r.Client.Create(ctx, p)
	podMetrics.Count(podmetrics.Create, err)
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		r.Recorder.Eventf(ds, nil, corev1.EventTypeWarning, "FailedCreate", "Create", "Error creating: %v", err)
		return fmt.Errorf("create the pod of node %s: %w", node, err)
	}
	r.expectations.Created(client.ObjectKeyFromObject(ds), p.Name)
	r.Recorder.Eventf(ds, p, corev1.EventTypeNormal, "SuccessfulCreate", "Create", "Created pod: %s", p.Name)
	// Best effort: refresh sets the conditions of a pod this write misses.
	_ = r.patchPodStatus(ctx, ds, p, inplaceupdate.InitGates(metav1.NewTime(r.Clock.Now())))
	return nil
}

func (r *Reconciler) deletePods(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, pods []*corev1.Pod) error {
	return eachPod(pods, func(p *corev1.Pod) error { return r.deletePod(ctx, ds, p) })
}

// deletePod deletes a pod, unless the preDelete hook holds it: then the pod only moves to PreparingDelete
// (held not ready when the hook says so), and a later reconcile deletes it once the hook lets go.
func (r *Reconciler) deletePod(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, p *corev1.Pod) error {
	d := lifecycle.Plan(preDeleteOnly(ds), p, lifecycle.IntentDelete)
	if !d.Proceed {
		return r.holdForHook(ctx, ds, p, d)
	}
	err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	podMetrics.Count(podmetrics.Delete, err)
	if err != nil {
		r.Recorder.Eventf(ds, p, corev1.EventTypeWarning, "FailedDelete", "Delete", "Error deleting: %v", err)
		return fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	r.expectations.Deleted(client.ObjectKeyFromObject(ds), p.UID)
	r.Recorder.Eventf(ds, p, corev1.EventTypeNormal, "SuccessfulDelete", "Delete", "Deleted pod: %s", p.Name)
	return nil
}

// preDeleteOnly is the DaemonSet's lifecycle as it honours it: the preDelete hook alone.
func preDeleteOnly(ds *kruiseappsv1alpha1.DaemonSet) *kruiseappspub.Lifecycle {
	if ds.Spec.Lifecycle == nil || ds.Spec.Lifecycle.PreDelete == nil {
		return nil
	}
	return &kruiseappspub.Lifecycle{PreDelete: ds.Spec.Lifecycle.PreDelete}
}

// holdForHook moves a pod the preDelete hook holds to PreparingDelete: first its KruisePodReady holder (so
// the hook's operator finds it out of its endpoints), then the state label it acts on.
func (r *Reconciler) holdForHook(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, p *corev1.Pod, d lifecycle.Decision) error {
	now := r.Clock.Now()
	if err := r.patchPodStatus(ctx, ds, p, func(p *corev1.Pod) bool { return lifecycle.ApplyReadiness(p, d, now) }); err != nil {
		return err
	}
	changed := false
	err := r.patchPod(ctx, ds, p, func(p *corev1.Pod) bool {
		changed = lifecycle.SetState(p, d.State, now)
		return changed
	})
	if err == nil && changed {
		r.Recorder.Eventf(ds, p, corev1.EventTypeNormal, "PreparingDelete", "Delete",
			"pod %s waits for its preDelete hook before it is deleted", p.Name)
	}
	return err
}

// podWriter writes the DaemonSet's pods (workloads/podwrite), telling its expectations.
func (r *Reconciler) podWriter(ds *kruiseappsv1alpha1.DaemonSet) podwrite.Writer {
	key := client.ObjectKeyFromObject(ds)
	return podwrite.Writer{Client: r.Client, Wrote: func(pod, rv string) { r.expectations.Updated(key, pod, rv) }}
}

func (r *Reconciler) patchPod(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	return r.podWriter(ds).Patch(ctx, p, change)
}

func (r *Reconciler) patchPodStatus(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	return r.podWriter(ds).PatchStatus(ctx, p, change)
}

// eachPod runs fn for every pod, at most podWorkers at once, and joins their errors: one pod's failure must
// not hold back the others.
func eachPod(pods []*corev1.Pod, fn func(*corev1.Pod) error) error {
	return parallel.Each(pods, podWorkers, fn)
}

func eachNode(nodes []string, fn func(string) error) error {
	return parallel.Each(nodes, podWorkers, fn)
}
