package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Ledger writes what the pod webhooks admit into a WorkloadSpread's status (creatingPods, deletingPods,
// missingReplicas). Every write is an update at the resource version it read, so two admissions racing for
// a subset's last room conflict, and the loser reads again and chooses again: a subset is never overfilled.
type Ledger struct {
	// Client reads from the cache and writes; Live reads past the cache after a conflict.
	Client client.Client
	Live   client.Reader
}

// contended is the retry of a write that lost a race: a burst of new pods of one workload all write the same
// WorkloadSpread, so it retries more often than client-go's default before refusing a pod.
var contended = wait.Backoff{Steps: 12, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Cap: time.Second}

// Update applies change to a copy of ws and writes its status when change reports a change, reading ws
// again and retrying on conflict. It returns the WorkloadSpread change saw last.
func (l *Ledger) Update(ctx context.Context, ws *kruiseappsv1alpha1.WorkloadSpread,
	change func(*kruiseappsv1alpha1.WorkloadSpread) (bool, error)) (*kruiseappsv1alpha1.WorkloadSpread, error) {
	cur := ws.DeepCopy()
	first := true
	err := retry.RetryOnConflict(contended, func() error {
		if !first {
			cur = &kruiseappsv1alpha1.WorkloadSpread{}
			if err := l.Live.Get(ctx, client.ObjectKeyFromObject(ws), cur); err != nil {
				return err
			}
		}
		first = false
		changed, err := change(cur)
		if err != nil || !changed {
			return err
		}
		return l.Client.Status().Update(ctx, cur)
	})
	if err != nil {
		return cur, fmt.Errorf("recording in WorkloadSpread %s: %w", ws.Name, err)
	}
	return cur, nil
}
