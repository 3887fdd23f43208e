package deployment

import (
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// A scale planned from a ReplicaSet read before someone else's write goes through when that write left the
// size alone (kube-controller-manager's status writes, with every pod), and is dropped when it resized it.
func TestScaleTestsTheSizeNotTheVersion(t *testing.T) {
	c, d, r := scaleFixture(t, "scale-guard")
	plan := Plan{DesiredReplicas: 4, MaxReplicas: 5}
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
			rs := newReplicaSet(d, nil, Step{To: 1}, plan)
			rs.Name += "-" + map[bool]string{true: "a", false: "b"}[tc.wantWrite]
			if err := c.Create(t.Context(), rs); err != nil {
				t.Fatal(err)
			}
			read := rs.DeepCopy()
			// kube-controller-manager may have written its status since the creation: the other write is retried.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.Get(t.Context(), client.ObjectKeyFromObject(rs), rs); err != nil {
					return err
				}
				tc.other(rs)
				return c.Update(t.Context(), rs)
			})
			if err != nil {
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
			// kube-controller-manager writes the ReplicaSet too (its status, its revision annotation), so the object
			// returned is checked against the version it replaced rather than against a later read.
			if tc.wantWrite && (got.Annotations[maxReplicasAnnotation] != "5" || written.ResourceVersion == rs.ResourceVersion ||
				*written.Spec.Replicas != tc.wantSize) {
				t.Errorf("annotations %v; written: resourceVersion %s (replaced %s), %d replicas", got.Annotations,
					written.ResourceVersion, rs.ResourceVersion, *written.Spec.Replicas)
			}
		})
	}
}

// A scale stamps the step's batch labels on the pod template, or removes them, and is dropped when the
// stamps it read changed meanwhile.
func TestScaleStampsBatchLabels(t *testing.T) {
	c, d, r := scaleFixture(t, "scale-stamp")
	plan := Plan{DesiredReplicas: 4, MaxReplicas: 4}
	batch1, batch2 := control.BatchPodLabels("v2", 0), control.BatchPodLabels("v2", 1)
	for _, tc := range []struct {
		name      string
		created   map[string]string // stamped at creation
		other     map[string]string // stamped by someone else after the read; nil: no write
		step      Step
		wantWrite bool
		want      map[string]string // stamped afterwards
	}{
		{name: "stamped while growing", step: Step{From: 1, To: 3, Relabel: true, Labels: batch1}, wantWrite: true, want: batch1},
		{name: "restamped for the next batch", created: batch1, step: Step{From: 1, To: 3, Relabel: true, Labels: batch2},
			wantWrite: true, want: batch2},
		{name: "stamps removed", created: batch2, step: Step{From: 1, To: 1, Relabel: true}, wantWrite: true},
		{name: "stamps changed meanwhile", created: batch1, other: batch2, step: Step{From: 1, To: 1, Relabel: true}, want: batch2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := newReplicaSet(d, nil, Step{To: 1, Relabel: true, Labels: tc.created}, plan)
			rs.Name += "-" + strings.ReplaceAll(tc.name, " ", "-")
			if err := c.Create(t.Context(), rs); err != nil {
				t.Fatal(err)
			}
			read := rs.DeepCopy()
			if tc.other != nil {
				maps.Copy(rs.Spec.Template.Labels, tc.other)
				if err := c.Update(t.Context(), rs); err != nil {
					t.Fatal(err)
				}
			}
			tc.step.Name, tc.step.New = rs.Name, true
			written, err := r.scale(t.Context(), d, read, tc.step, plan)
			if err != nil {
				t.Fatal(err)
			}
			got := &appsv1.ReplicaSet{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(rs), got); err != nil {
				t.Fatal(err)
			}
			stamped := control.StampedBatchLabels(&got.Spec.Template, &d.Spec.Template)
			if (written != nil) != tc.wantWrite || !maps.Equal(stamped, tc.want) {
				t.Errorf("written %v, stamped %v; want a write %v, stamped %v", written != nil, stamped, tc.wantWrite, tc.want)
			}
		})
	}
}

// scaleFixture is a paused Deployment of 4 replicas in a new namespace, and a Reconciler writing directly. An
// active sibling ReplicaSet, its replica annotations current, keeps kube-controller-manager from scaling a
// test's ReplicaSet while it is the lone active one (its sync of a paused Deployment scales that one to 4).
func scaleFixture(t *testing.T, namespace string) (client.Client, *appsv1.Deployment, *Reconciler) {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	c := managertest.DirectClient(t, clusterConfig, managertest.Scheme(t, clientgoscheme.AddToScheme))
	d := demoDeployment(newNamespace(t, c, namespace), "web", 4)
	d.Spec.Paused = true
	if err := c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	sibling := newReplicaSet(d, nil, Step{To: 1}, Plan{DesiredReplicas: 4, MaxReplicas: 4})
	sibling.Name += "-sibling"
	if err := c.Create(t.Context(), sibling); err != nil {
		t.Fatal(err)
	}
	return c, d, &Reconciler{Deps: reconcilerdeps.Deps{Client: c, Recorder: events.NewFakeRecorder(10)}}
}
