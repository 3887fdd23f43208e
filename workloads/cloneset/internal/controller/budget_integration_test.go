package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
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

func updatedTo(ps []corev1.Pod, image string) int {
	n := 0
	for _, p := range ps {
		if p.Spec.Containers[0].Image == image {
			n++
		}
	}
	return n
}

// The CloneSet asks the pods' disruption budget before each in-place update: with room for one, one pod is
// updated and the others wait, though the CloneSet's own maxUnavailable would take them all; with more room
// the update completes.
func TestInPlaceUpdateAsksTheBudget(t *testing.T) {
	b := &budget{left: 1, admitted: map[string]bool{}}
	c := startController(t, func(r *Reconciler) { r.AllowInPlaceUpdate = b.allow })
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "held", 3, "nginx:1", inPlace, func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	})
	create(t, c, cs)
	settled(t, c, cs, 3)
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
	settledOne := func(ctx context.Context) (bool, error) {
		ps, err := pods(ctx, c, cs)
		return updatedTo(ps, "nginx:2") == 1 && err == nil, err
	}
	eventually(t, "one pod updated in place", settledOne)
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if ok, err := settledOne(t.Context()); !ok {
			t.Fatalf("more than the budget's pod updated (error %v)", err)
		}
	}
	b.grant(2)
	settled(t, c, cs, 3)
}
