package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
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

// An orphan member that appears once the set has settled (a pod a deleted apps/v1 StatefulSet of the same
// name left, or one the cache showed late) is adopted then, not at the set's next unrelated event.
func TestAdoptsAnOrphanAfterSettling(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "late", 1, "nginx:1")
	create(t, c, s)
	settled(t, c, s, 1)
	// A member by its name, the set's and an ordinal. Adopted, ordinal 1 is beyond the replicas and the set
	// may delete it: held, it keeps its owner to be read.
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late-1", Labels: map[string]string{"app": "late"}},
		Spec:       *s.Spec.Template.Spec.DeepCopy(),
	}
	held(t, c, orphan)
	eventually(t, "the orphan adopted", func(ctx context.Context) (bool, error) {
		p := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKeyFromObject(orphan), p)
		ref := metav1.GetControllerOf(p)
		return err == nil && ref != nil && ref.UID == s.UID, err
	})
}
