package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/revision"
)

// holdFinalizer keeps a test's pod readable after the controller deletes it.
const holdFinalizer = "flotilla.dev/test-hold"

// held creates the pod with holdFinalizer and removes the finalizer when the test ends.
func held(t *testing.T, c client.Client, p *corev1.Pod) {
	t.Helper()
	p.Finalizers = append(p.Finalizers, holdFinalizer)
	create(t, c, p)
	t.Cleanup(func() {
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))
		if err := c.Patch(context.Background(), p, patch); client.IgnoreNotFound(err) != nil {
			t.Errorf("releasing pod %s: %v", p.Name, err)
		}
	})
}

// An orphan that appears on a node of the pool once the DaemonSet has settled (a pod a native DaemonSet
// deleted with --cascade=orphan left, or one the cache showed late) is adopted then, not at the DaemonSet's
// next unrelated event.
func TestAdoptsAnOrphanAfterSettling(t *testing.T) {
	t.Parallel()
	c, ns := startController(t)
	pool := managertest.NodePool(t, c, 1, poolTaint)
	ds := newDaemonSet(ns, pool)
	hash := revision.TemplateHash(&ds.Spec.Template, nil)
	create(t, c, ds)
	waitFleet(t, c, ds, 1, 1)
	// Adopted, it is the node's second pod, which the DaemonSet may delete: held, it keeps its owner to be read.
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "released",
			Labels: map[string]string{"app": "agent", plan.HashLabel: hash}},
		Spec: *ds.Spec.Template.Spec.DeepCopy(),
	}
	orphan.Spec.NodeName = pool + "-0"
	held(t, c, orphan)
	eventually(t, "the orphan adopted", func(ctx context.Context) (bool, error) {
		p := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKeyFromObject(orphan), p)
		ref := metav1.GetControllerOf(p)
		return err == nil && ref != nil && ref.UID == ds.UID, err
	})
}
