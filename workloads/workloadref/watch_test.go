package workloadref

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestWatch(t *testing.T) {
	unknown := schema.GroupKind{Group: "example.com", Kind: "Thing"}
	tests := []struct {
		name   string
		kruise bool
		kinds  []schema.GroupKind
		want   []schema.GroupKind
	}{
		{"native only", false, []schema.GroupKind{DeploymentKind, JobKind}, []schema.GroupKind{DeploymentKind, JobKind}},
		{"with the kruise kinds", true, []schema.GroupKind{StatefulSetKind},
			[]schema.GroupKind{StatefulSetKind, CloneSetKind, AdvancedStatefulSetKind}},
		{"an unknown kind left out", false, []schema.GroupKind{unknown, ReplicaSetKind}, []schema.GroupKind{ReplicaSetKind}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Watch(tt.kruise, tt.kinds...)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d kinds, want %v", len(got), tt.want)
			}
			for i, w := range got {
				if w.Kind != tt.want[i] || w.Object == nil {
					t.Errorf("kind %d: %v (object %T), want %v", i, w.Kind, w.Object, tt.want[i])
				}
			}
		})
	}
	a, b := Watch(false, DeploymentKind), Watch(false, DeploymentKind)
	if a[0].Object == b[0].Object {
		t.Error("two watches share one object")
	}
}

func TestReplicasChanged(t *testing.T) {
	w := Watch(false, DeploymentKind)[0]
	p := ReplicasChanged(w.Replicas)
	d := func(n *int32) *appsv1.Deployment { return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: n}} }
	cases := []struct {
		name     string
		old, new *int32
		want     bool
	}{
		{"scaled", ptr.To[int32](1), ptr.To[int32](2), true},
		{"unchanged", ptr.To[int32](2), ptr.To[int32](2), false},
		{"set", nil, ptr.To[int32](2), true},
	}
	for _, c := range cases {
		if got := p.Update(event.UpdateEvent{ObjectOld: d(c.old), ObjectNew: d(c.new)}); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if !p.Create(event.CreateEvent{Object: d(nil)}) || !p.Delete(event.DeleteEvent{Object: d(nil)}) {
		t.Error("creations and deletions pass")
	}
}
