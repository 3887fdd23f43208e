package batchrelease

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

// labelBatchPods marks updated pods that do not carry the release's rollout-id yet with it and the current
// (1-based) batch, up to the batch's target, and returns how many updated pods carry it afterwards. Pods a
// workload created with the batch's labels (control.Batch.PodLabels) need no patch.
func (r *Reconciler) labelBatchPods(ctx context.Context, br *rolloutsv1beta1.BatchRelease, info *control.WorkloadInfo, pods []*corev1.Pod) (int32, error) {
	id := br.Spec.ReleasePlan.RolloutID
	target := plan.RollbackTarget(br.Spec.ReleasePlan, br.Status.CanaryStatus.CurrentBatch, info.Replicas,
		br.Status.CanaryStatus.NoNeedUpdateReplicas)
	unlabelled, labelled := r.sent.split(pods, id, r.Clock.Now())
	batch := control.BatchPodLabels(id, br.Status.CanaryStatus.CurrentBatch)
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

// sentLabels remembers the label patches sent recently, so that a reconcile reading pods from a cache that
// has not caught up yet neither patches them again nor counts them as unlabelled.
type sentLabels struct {
	mu   sync.Mutex
	sent map[types.UID]sentLabel
}

type sentLabel struct {
	id string
	at time.Time
}

// sentLabelTTL is how long a sent patch stands in for the cache; the cache catches up in well under that.
const sentLabelTTL = time.Minute

func (s *sentLabels) record(uid types.UID, id string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent == nil {
		s.sent = map[types.UID]sentLabel{}
	}
	s.sent[uid] = sentLabel{id: id, at: now}
}

// split returns the live pods that still need the rollout-id and how many carry it (or were just sent it).
func (s *sentLabels) split(pods []*corev1.Pod, id string, now time.Time) ([]*corev1.Pod, int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, l := range s.sent {
		if now.Sub(l.at) > sentLabelTTL {
			delete(s.sent, uid)
		}
	}
	var unlabelled []*corev1.Pod
	var labelled int32
	for _, p := range pods {
		switch {
		case !p.DeletionTimestamp.IsZero():
		case p.Labels[rolloutsv1beta1.RolloutIDLabel] == id || s.sent[p.UID].id == id:
			labelled++
		default:
			unlabelled = append(unlabelled, p)
		}
	}
	return unlabelled, labelled
}

// labelPod patches a copy: pod is the cache's own object (listed without copies).
func (r *Reconciler) labelPod(ctx context.Context, pod *corev1.Pod, id string, batch map[string]string) error {
	want := pod.DeepCopy()
	if want.Labels == nil {
		want.Labels = map[string]string{}
	}
	maps.Copy(want.Labels, batch)
	if err := r.Client.Patch(ctx, want, client.MergeFrom(pod)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("labelling pod %s: %w", pod.Name, err)
	}
	r.sent.record(pod.UID, id, r.Clock.Now())
	return nil
}
