package controller

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/test/managertest"
)

// budget is a disruption budget as the in-place update check sees it: it lets through the pods it admitted
// and `left` more.
type budget struct {
	mu       sync.Mutex
	left     int
	admitted map[string]bool
}

func (b *budget) allow(_ context.Context, pod *corev1.Pod) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.admitted[pod.Name] {
		return true, nil
	}
	if b.left == 0 {
		return false, nil
	}
	b.left--
	b.admitted[pod.Name] = true
	return true, nil
}

func (b *budget) grant(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left += n
}

// The set asks the pods' disruption budget before each in-place update: with room for one, one pod is updated
// and the others wait, though maxUnavailable 3 would take them all; with more room the update completes.
func TestInPlaceUpdateAsksTheBudget(t *testing.T) {
	b := &budget{left: 1, admitted: map[string]bool{}}
	c := startController(t, func(r *Reconciler) { r.AllowInPlaceUpdate = b.allow })
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "held", 3, "nginx:1", maxUnavailable(intstr.FromInt32(3)), inPlace(0))
	create(t, c, s)
	settled(t, c, s, 3)
	update(t, c, s, setImage("nginx:2"))
	oneUpdated := func(ctx context.Context) (bool, error) {
		ps, err := livePods(ctx, c, s)
		n := 0
		for _, p := range ps {
			if p.Spec.Containers[0].Image == "nginx:2" {
				n++
			}
		}
		return n == 1 && err == nil, err
	}
	eventually(t, "one pod updated in place", oneUpdated)
	consistently(t, "only the budget's pod updated", oneUpdated)
	b.grant(2)
	settled(t, c, s, 3)
}
