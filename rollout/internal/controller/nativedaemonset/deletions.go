package nativedaemonset

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// deletions remembers the pods deleted per DaemonSet until their node runs a pod of the batch revision. A
// pod deleted a moment ago may be gone from the cache before its replacement is in it; counted as neither,
// the next reconcile would find the batch short and delete another old pod, as many as maxUnavailable lets
// it, and a batch of one would replace every pod.
type deletions struct {
	mu      sync.Mutex
	pending map[types.NamespacedName]map[types.UID]deletion
}

// deletion is one pod deleted for a batch: its node, and when.
type deletion struct {
	node string
	at   time.Time
}

func newDeletions() *deletions {
	return &deletions{pending: map[types.NamespacedName]map[types.UID]deletion{}}
}

func (d *deletions) expect(ds types.NamespacedName, p *corev1.Pod, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending[ds] == nil {
		d.pending[ds] = map[types.UID]deletion{}
	}
	d.pending[ds][p.UID] = deletion{node: p.Spec.NodeName, at: now}
}

func (d *deletions) drop(ds types.NamespacedName, uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pending[ds], uid)
}

func (d *deletions) forget(ds types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pending, ds)
}

// settle forgets the deletions whose node runs a pod of revision now (or that expired), and returns the
// listed pods that are not being deleted together with the number of deletions still waiting for their
// replacement.
func (d *deletions) settle(ds types.NamespacedName, pods []corev1.Pod, revision string, now time.Time) ([]corev1.Pod, int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	replaced := map[string]bool{}
	for _, p := range pods {
		if p.Labels[rolloutsv1beta1.ControllerRevisionHashLabelKey] == revision {
			replaced[p.Spec.NodeName] = true
		}
	}
	for uid, del := range d.pending[ds] {
		if replaced[del.node] || now.Sub(del.at) > deletionTTL {
			delete(d.pending[ds], uid)
		}
	}
	var out []corev1.Pod
	for _, p := range pods {
		if _, ok := d.pending[ds][p.UID]; !ok {
			out = append(out, p)
		}
	}
	return out, int32(len(d.pending[ds])) //nolint:gosec // one per node
}
