package revision

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func storeRevision(name string, number int64) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Revision: number}
}

func storedNames(t *testing.T, c client.Client) []string {
	t.Helper()
	list := &appsv1.ControllerRevisionList{}
	if err := c.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cr := range list.Items {
		out = append(out, cr.Name)
	}
	return out
}

// Write creates a new revision and renumbers one brought back; Truncate deletes the oldest beyond the limit
// that nothing runs.
func TestWriteAndTruncate(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithObjects(storeRevision("r1", 1), storeRevision("r2", 2)).Build()
	if err := Write(ctx, c, Update{Action: Create, Revision: storeRevision("r3", 3)}); err != nil {
		t.Fatal(err)
	}
	back := &appsv1.ControllerRevision{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "r1"}, back); err != nil {
		t.Fatal(err)
	}
	back.Revision = 4
	if err := Write(ctx, c, Update{Action: Renumber, Revision: back}); err != nil {
		t.Fatal(err)
	}
	list := &appsv1.ControllerRevisionList{}
	if err := c.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	var all []*appsv1.ControllerRevision
	for i := range list.Items {
		all = append(all, &list.Items[i])
	}
	if err := Truncate(ctx, c, all, sets.New("r1"), 1); err != nil {
		t.Fatal(err)
	}
	if got := storedNames(t, c); len(got) != 2 || got[0] != "r1" || got[1] != "r3" {
		t.Errorf("left %v, want r1 (live, renumbered 4) and r3 (the newest not live)", got)
	}
}

// BumpCollision persists the raised count and asks the caller to try again.
func TestBumpCollision(t *testing.T) {
	ctx := context.Background()
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "ns"}}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ds).WithStatusSubresource(ds).Build()
	err := BumpCollision(ctx, c, "DaemonSet", ds, &ds.Status.CollisionCount)
	if err == nil || !strings.Contains(err.Error(), "DaemonSet ns/ds, collisionCount raised to 1") {
		t.Fatalf("error %v", err)
	}
	stored := &appsv1.DaemonSet{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ds), stored); err != nil || stored.Status.CollisionCount == nil || *stored.Status.CollisionCount != 1 {
		t.Fatalf("stored collisionCount %v: %v", stored.Status.CollisionCount, err)
	}
}
