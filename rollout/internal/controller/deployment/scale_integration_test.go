package deployment

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
)

// A scale planned from a ReplicaSet read before someone else's write goes through when that write left the
// size alone (kube-controller-manager's status writes, with every pod), and is dropped when it resized it.
func TestScaleTestsTheSizeNotTheVersion(t *testing.T) {
	if clusterConfig == nil {
		t.Skip("no control plane in -short mode")
	}
	c := managertest.DirectClient(t, clusterConfig, managertest.Scheme(t, clientgoscheme.AddToScheme))
	ns := newNamespace(t, c, "scale-guard")
	d := demoDeployment(ns, "web", 4)
	d.Spec.Paused = true
	if err := c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	plan := Plan{DesiredReplicas: 4, MaxReplicas: 5}
	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10)}
	for _, tc := range []struct {
		name      string
		other     func(rs *appsv1.ReplicaSet)
		wantSize  int32
		wantWrite bool
	}{
		{name: "labelled meanwhile", other: func(rs *appsv1.ReplicaSet) { rs.Labels["touched"] = "yes" }, wantSize: 3, wantWrite: true},
		{name: "resized meanwhile", other: func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr.To[int32](2) }, wantSize: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := newReplicaSet(d, nil, 1, plan)
			rs.Name += "-" + map[bool]string{true: "a", false: "b"}[tc.wantWrite]
			if err := c.Create(t.Context(), rs); err != nil {
				t.Fatal(err)
			}
			read := rs.DeepCopy()
			tc.other(rs)
			if err := c.Update(t.Context(), rs); err != nil {
				t.Fatal(err)
			}
			written, err := r.scale(t.Context(), d, read, Step{Name: rs.Name, From: 1, To: 3}, plan)
			if err != nil {
				t.Fatal(err)
			}
			if (written != nil) != tc.wantWrite {
				t.Errorf("written %v, want a write: %v", written != nil, tc.wantWrite)
			}
			got := &appsv1.ReplicaSet{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(rs), got); err != nil {
				t.Fatal(err)
			}
			if *got.Spec.Replicas != tc.wantSize {
				t.Errorf("spec.replicas %d, want %d", *got.Spec.Replicas, tc.wantSize)
			}
			if tc.wantWrite && (got.Annotations[maxReplicasAnnotation] != "5" || written.ResourceVersion != got.ResourceVersion) {
				t.Errorf("annotations %v, resourceVersion %s (written) against %s", got.Annotations, written.ResourceVersion, got.ResourceVersion)
			}
		})
	}
}
