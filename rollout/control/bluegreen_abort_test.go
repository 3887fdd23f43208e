package control

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// bgReplicaSet is a ReplicaSet of d with replicas pods; current: of d's template.
func bgReplicaSet(d *appsv1.Deployment, name string, replicas int32, current bool) appsv1.ReplicaSet {
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "v": "old"}}}
	if current {
		tmpl = *d.Spec.Template.DeepCopy()
	}
	tmpl.Labels[rolloutsv1beta1.PodTemplateHashLabelKey] = name
	return appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace, Generation: 2},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Template: tmpl},
		Status:     appsv1.ReplicaSetStatus{Replicas: replicas, ObservedGeneration: 2},
	}
}

// bgSurged is bgInitialized after a batch of 2 new pods: resumed, surge 2, the new ReplicaSet at 2.
func bgSurged() (*appsv1.Deployment, []appsv1.ReplicaSet) {
	d := bgInitialized()
	d.Spec.Template.Labels = map[string]string{"app": "web", "v": "new"}
	d.Spec.Paused = false
	d.Spec.Strategy.RollingUpdate.MaxSurge = is(2)
	return d, []appsv1.ReplicaSet{bgReplicaSet(d, "stable", 4, false), bgReplicaSet(d, "new", 2, true)}
}

func TestDeploymentBlueGreenAbort(t *testing.T) {
	pause := patchOf("spec.paused", true)
	scaleDown := patchOf("spec.replicas", int64(0))
	tests := []struct {
		name    string
		mutate  func(*appsv1.Deployment, []appsv1.ReplicaSet)
		wantObj string // "": no write
		want    map[string]any
	}{
		{"a settled surge: pause first", nil, "web", pause},
		{"a surge under way: wait, a pause would scale the stable ReplicaSet", func(d *appsv1.Deployment, _ []appsv1.ReplicaSet) {
			d.Spec.Strategy.RollingUpdate.MaxSurge = is(3)
		}, "", nil},
		{"a percentage surge rounds up as the controller does", func(d *appsv1.Deployment, _ []appsv1.ReplicaSet) {
			d.Spec.Strategy.RollingUpdate.MaxSurge = ps("26%")
		}, "web", pause},
		{"the Deployment not observed: wait", func(d *appsv1.Deployment, _ []appsv1.ReplicaSet) {
			d.Generation++
		}, "", nil},
		{"a ReplicaSet not observed: wait", func(_ *appsv1.Deployment, rss []appsv1.ReplicaSet) {
			rss[1].Generation++
		}, "", nil},
		{"no new pod yet: pause at once", func(d *appsv1.Deployment, rss []appsv1.ReplicaSet) {
			rss[1].Spec.Replicas = ptr.To[int32](0)
		}, "web", pause},
		{"paused and observed: the new ReplicaSet goes to 0", func(d *appsv1.Deployment, _ []appsv1.ReplicaSet) {
			d.Spec.Paused = true
		}, "new", scaleDown},
		{"paused, the pause not observed: wait", func(d *appsv1.Deployment, _ []appsv1.ReplicaSet) {
			d.Spec.Paused, d.Generation = true, d.Generation+1
		}, "", nil},
		{"done: no new pod, the template left alone", func(d *appsv1.Deployment, rss []appsv1.ReplicaSet) {
			d.Spec.Paused = true
			rss[1].Spec.Replicas, rss[1].Status.Replicas = ptr.To[int32](0), 0
		}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, rss := bgSurged()
			if tt.mutate != nil {
				tt.mutate(d, rss)
			}
			w := deploymentBlueGreenAbort(d, rss)
			got := ""
			if w.obj != nil {
				got = w.obj.GetName()
			}
			if got != tt.wantObj {
				t.Fatalf("writes to %q, want %q", got, tt.wantObj)
			}
			if diff := cmp.Diff(tt.want, w.patch); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewReplicaSetIdle(t *testing.T) {
	d, rss := bgSurged()
	if newReplicaSetIdle(d, rss) {
		t.Errorf("a new ReplicaSet of 2 pods is idle")
	}
	if !newReplicaSetIdle(d, rss[:1]) {
		t.Errorf("no new ReplicaSet is not idle")
	}
	rss[1].Spec.Replicas = ptr.To[int32](0)
	if newReplicaSetIdle(d, rss) {
		t.Errorf("a new ReplicaSet scaled to 0 but still running 2 pods is idle")
	}
	rss[1].Status.Replicas = 0
	if !newReplicaSetIdle(d, rss) {
		t.Errorf("a new ReplicaSet at 0 is not idle")
	}
}

func TestCloneSetBlueGreenAbortPatch(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*kruiseappsv1alpha1.CloneSet)
		want   map[string]any
	}{
		{"surged: frozen again, one surge pod", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Partition, cs.Spec.UpdateStrategy.MaxSurge = nil, is(3)
		}, patchOf("spec.updateStrategy.partition", "100%", "spec.updateStrategy.maxSurge", iv(1))},
		{"a partition of all replicas is frozen", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Partition = is(4)
		}, map[string]any{}},
		{"a partition below the replicas", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Partition = is(3)
		}, patchOf("spec.updateStrategy.partition", "100%")},
		{"as Initialize left it: nothing", nil, map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := bgCloneSetInitialized()
			if tt.mutate != nil {
				tt.mutate(cs)
			}
			if diff := cmp.Diff(tt.want, cloneSetBlueGreenAbortPatch(cs)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCloneSetBlueGreenAbort aborts a CloneSet released blue-green to 3 new pods: it is frozen again with one
// surge pod, its template untouched, and a retry's first batch surges its own pods only.
func TestCloneSetBlueGreenAbort(t *testing.T) {
	ctx := context.Background()
	c := bgFakeClient(t, bgCloneSet())
	ctl := NewCloneSetBlueGreen(c, cloneSetTarget(rolloutsv1beta1.ReleasePlan{}))
	if err := ctl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ctl.UpgradeBatch(ctx, Batch{DesiredUpdated: 3}); err != nil {
		t.Fatal(err)
	}
	template := getCloneSet(t, c).Spec.Template
	for range 2 { // a second call finds it frozen and has no pod to evict
		if err := ctl.UpgradeBatch(ctx, Batch{DesiredUpdated: 0, Abort: true}); err != nil {
			t.Fatal(err)
		}
	}
	cs := getCloneSet(t, c)
	us := cs.Spec.UpdateStrategy
	if us.Partition == nil || *us.Partition != sv("100%") || *us.MaxSurge != iv(1) || !ControlledBy(cs.Annotations, testOwner) {
		t.Fatalf("after the abort: partition %v maxSurge %v annotations %v; want 100%%, 1, still controlled", us.Partition, us.MaxSurge, cs.Annotations)
	}
	if diff := cmp.Diff(template, cs.Spec.Template); diff != "" {
		t.Errorf("the abort changed the template (-before +after):\n%s", diff)
	}
	if err := ctl.UpgradeBatch(ctx, Batch{DesiredUpdated: 1}); err != nil {
		t.Fatal(err)
	}
	if us := getCloneSet(t, c).Spec.UpdateStrategy; us.Partition != nil || *us.MaxSurge != iv(1) {
		t.Errorf("the retry's first batch: partition %v maxSurge %v, want none and 1", us.Partition, us.MaxSurge)
	}
}
