package batchrelease

import (
	"context"
	"fmt"
	"strconv"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

// labelBatchPods marks updated pods that do not carry the release's rollout-id yet with it and the current
// (1-based) batch, up to the batch's target, and returns how many updated pods carry it afterwards.
func (r *Reconciler) labelBatchPods(ctx context.Context, br *rolloutsv1beta1.BatchRelease, info *control.WorkloadInfo) (int32, error) {
	if info.UpdatedPods == nil {
		return 0, nil
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(br.Namespace), client.MatchingLabelsSelector{Selector: info.UpdatedPods}); err != nil {
		return 0, fmt.Errorf("listing updated pods: %w", err)
	}
	id := br.Spec.ReleasePlan.RolloutID
	target := plan.BatchTarget(br.Spec.ReleasePlan, br.Status.CanaryStatus.CurrentBatch, info.Replicas)
	unlabelled, labelled := splitByRolloutID(pods.Items, id)
	batch := strconv.Itoa(int(br.Status.CanaryStatus.CurrentBatch) + 1)
	todo := unlabelled[:min(len(unlabelled), int(max(target-labelled, 0)))]
	// Pod patches are independent; sending them side by side keeps a large batch from waiting on one
	// round trip per pod.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(labelWorkers)
	for _, pod := range todo {
		g.Go(func() error { return r.labelPod(gctx, pod, id, batch) })
	}
	if err := g.Wait(); err != nil {
		return labelled, err
	}
	return labelled + int32(len(todo)), nil //nolint:gosec // len(todo) <= target
}

// labelWorkers bounds the pod label patches in flight at once.
const labelWorkers = 16

func splitByRolloutID(pods []corev1.Pod, id string) ([]*corev1.Pod, int32) {
	var unlabelled []*corev1.Pod
	var labelled int32
	for i := range pods {
		p := &pods[i]
		switch {
		case !p.DeletionTimestamp.IsZero():
		case p.Labels[rolloutsv1beta1.RolloutIDLabel] == id:
			labelled++
		default:
			unlabelled = append(unlabelled, p)
		}
	}
	return unlabelled, labelled
}

func (r *Reconciler) labelPod(ctx context.Context, pod *corev1.Pod, id, batch string) error {
	orig := pod.DeepCopy()
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[rolloutsv1beta1.RolloutIDLabel] = id
	pod.Labels[rolloutsv1beta1.RolloutBatchIDLabel] = batch
	if err := r.Client.Patch(ctx, pod, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("labelling pod %s: %w", pod.Name, err)
	}
	return nil
}
