package pernode

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestReadyFor(t *testing.T) {
	node := func(conds ...corev1.NodeCondition) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: conds}}
	}
	ready := func(s corev1.ConditionStatus, since int) corev1.NodeCondition {
		return corev1.NodeCondition{Type: corev1.NodeReady, Status: s, LastTransitionTime: metav1.NewTime(at(since))}
	}
	for _, tc := range []struct {
		name  string
		node  *corev1.Node
		delay time.Duration
		ready bool
		wait  time.Duration
	}{
		{"no Ready condition", node(), 0, false, 0},
		{"not ready", node(ready(corev1.ConditionFalse, 0)), 0, false, 0},
		{"unknown", node(ready(corev1.ConditionUnknown, 0)), 0, false, 0},
		{"ready for less than the delay", node(corev1.NodeCondition{Type: corev1.NodeMemoryPressure}, ready(corev1.ConditionTrue, 90)), 30 * time.Second, true, 20 * time.Second},
		{"ready long enough", node(ready(corev1.ConditionTrue, 0)), 30 * time.Second, true, 0},
		{"ready just now, no delay", node(ready(corev1.ConditionTrue, 100)), 0, true, 0},
	} {
		ok, wait := ReadyFor(tc.node, at(100), tc.delay)
		if ok != tc.ready || wait != tc.wait {
			t.Errorf("%s: ReadyFor = %v, %v; want %v, %v", tc.name, ok, wait, tc.ready, tc.wait)
		}
	}
}

func TestDecide(t *testing.T) {
	live := &corev1.Node{}
	deleting := &corev1.Node{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{Time: t0}}}
	for _, tc := range []struct {
		name                   string
		node                   *corev1.Node
		exists, deleting, keep bool
		want                   Action
	}{
		{"neither", nil, false, false, false, None},
		{"a node without its object", live, false, false, false, Create},
		{"a node being deleted gets none", deleting, false, false, false, None},
		{"both", live, true, false, false, Tidy},
		{"an object being deleted is left alone", live, true, true, false, None},
		{"the node gone", nil, true, false, false, Delete},
		{"the node being deleted", deleting, true, false, false, Delete},
		{"kept without its node", nil, true, false, true, Tidy},
	} {
		if got := Decide(tc.node, tc.exists, tc.deleting, tc.keep); got != tc.want {
			t.Errorf("%s: Decide = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNodeChanged(t *testing.T) {
	base := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"zone": "a"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	heartbeat := base.DeepCopy()
	heartbeat.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0)
	relabelled := base.DeepCopy()
	relabelled.Labels["zone"] = "b"
	notReady := base.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	deleting := base.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	for _, tc := range []struct {
		name string
		next *corev1.Node
		want bool
	}{
		{"a heartbeat", heartbeat, false},
		{"a label", relabelled, true},
		{"readiness", notReady, true},
		{"deletion", deleting, true},
	} {
		if got := NodeChanged.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.next}); got != tc.want {
			t.Errorf("%s: NodeChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLoad(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// A ConfigMap stands in for a node's object: Load is generic.
	obj := func(name string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "live"}}, obj("live", nil),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "alone"}},
		obj("orphan", nil), obj("kept", map[string]string{"fake": ""}),
	).Build()
	isFake := func(cm *corev1.ConfigMap) bool { _, ok := cm.Labels["fake"]; return ok }
	for _, tc := range []struct {
		name     string
		want     Action
		node, ob bool
	}{
		{"live", Tidy, true, true},
		{"alone", Create, true, false},
		{"orphan", Delete, false, true},
		{"kept", Tidy, false, true},
		{"nothing", None, false, false},
	} {
		node, got, action, err := Load(context.Background(), c, types.NamespacedName{Name: tc.name}, &corev1.ConfigMap{}, isFake)
		if err != nil || action != tc.want || (node != nil) != tc.node || (got != nil) != tc.ob {
			t.Errorf("%s: Load = node %v, object %v, %v, %v; want %v", tc.name, node != nil, got != nil, action, err, tc.want)
		}
	}
}

func TestReconcile(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "live"}}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "new"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone"}},
	).Build()
	var created, tidied []string
	h := Handlers[*corev1.ConfigMap]{
		Create: func(_ context.Context, node *corev1.Node) (ctrl.Result, error) {
			created = append(created, node.Name)
			return ctrl.Result{}, nil
		},
		Tidy: func(_ context.Context, node *corev1.Node, obj *corev1.ConfigMap) (ctrl.Result, error) {
			tidied = append(tidied, node.Name+"/"+obj.Name)
			return ctrl.Result{}, nil
		},
	}
	for _, name := range []string{"live", "new", "gone", "nothing"} {
		if _, err := Reconcile(context.Background(), c, types.NamespacedName{Name: name}, &corev1.ConfigMap{}, h); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if len(created) != 1 || created[0] != "new" || len(tidied) != 1 || tidied[0] != "live/live" {
		t.Errorf("created %v, tidied %v", created, tidied)
	}
	err := c.Get(context.Background(), types.NamespacedName{Name: "gone"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the object of a gone node: %v", err)
	}
}
