package nativedaemonset

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deletions remembers the pods deleted per DaemonSet until the cache stops listing them, so a reconcile on a
// stale cache neither counts them as available nor deletes past maxUnavailable.
type deletions struct {
	mu      sync.Mutex
	pending map[types.NamespacedName]map[types.UID]time.Time
}

func newDeletions() *deletions {
	return &deletions{pending: map[types.NamespacedName]map[types.UID]time.Time{}}
}

func (d *deletions) expect(ds types.NamespacedName, uid types.UID, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending[ds] == nil {
		d.pending[ds] = map[types.UID]time.Time{}
	}
	d.pending[ds][uid] = now
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

// settle forgets the deletions the cache has caught up with (or that expired) and returns the listed pods
// without those still pending.
func (d *deletions) settle(ds types.NamespacedName, pods []corev1.Pod, now time.Time) []corev1.Pod {
	d.mu.Lock()
	defer d.mu.Unlock()
	listed := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		listed[p.UID] = true
	}
	for uid, at := range d.pending[ds] {
		if !listed[uid] || now.Sub(at) > deletionTTL {
			delete(d.pending[ds], uid)
		}
	}
	var out []corev1.Pod
	for _, p := range pods {
		if _, ok := d.pending[ds][p.UID]; !ok {
			out = append(out, p)
		}
	}
	return out
}
