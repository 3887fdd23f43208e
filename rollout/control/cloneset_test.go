package control

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func testCloneSet(replicas int32, partition *intstr.IntOrString) *kruiseappsv1alpha1.CloneSet {
	return &kruiseappsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Generation: 2},
		Spec: kruiseappsv1alpha1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			UpdateStrategy: kruiseappsv1alpha1.CloneSetUpdateStrategy{
				Partition: partition, Paused: true,
			},
		},
		Status: kruiseappsv1alpha1.CloneSetStatus{
			ObservedGeneration: 2, UpdatedReplicas: 3, UpdatedReadyReplicas: 2,
			CurrentRevision: "web-5d8f7c", UpdateRevision: "web-6b9d4f",
		},
	}
}

func cloneSetClient(t *testing.T, cs *kruiseappsv1alpha1.CloneSet) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := kruiseappsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(cs).Build()
}

func cloneSetTarget(plan rolloutsv1beta1.ReleasePlan) Target {
	return Target{
		Namespace: "ns", Owner: testOwner, Plan: plan,
		Ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
	}
}

func getCloneSet(t *testing.T, c client.Client) *kruiseappsv1alpha1.CloneSet {
	t.Helper()
	cs := &kruiseappsv1alpha1.CloneSet{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "web"}, cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestCloneSetRelease walks one CloneSet through a release and checks its spec after each step.
func TestCloneSetRelease(t *testing.T) {
	ctx := context.Background()
	c := cloneSetClient(t, testCloneSet(10, nil))
	ctl := NewCloneSetPartition(c, cloneSetTarget(rolloutsv1beta1.ReleasePlan{}))

	if err := ctl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	cs := getCloneSet(t, c)
	if p := cs.Spec.UpdateStrategy.Partition; p == nil || p.String() != "100%" || cs.Spec.UpdateStrategy.Paused {
		t.Fatalf("after Initialize partition=%v paused=%v, want 100%% and false", p, cs.Spec.UpdateStrategy.Paused)
	}
	if !ControlledBy(cs.Annotations, testOwner) {
		t.Fatal("after Initialize the CloneSet carries no control-info")
	}

	steps := []struct {
		desired int32
		want    intstr.IntOrString
	}{{3, intstr.FromInt32(7)}, {2, intstr.FromInt32(7)}, {6, intstr.FromInt32(4)}}
	for _, s := range steps {
		if err := ctl.UpgradeBatch(ctx, Batch{DesiredUpdated: s.desired}); err != nil {
			t.Fatal(err)
		}
		if got := getCloneSet(t, c).Spec.UpdateStrategy.Partition; got == nil || *got != s.want {
			t.Fatalf("after UpgradeBatch(%d) partition = %v, want %v", s.desired, got, s.want)
		}
	}
	if err := ctl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if got := getCloneSet(t, c).Spec.UpdateStrategy.Partition; *got != intstr.FromInt32(4) {
		t.Fatalf("a repeated Initialize moved the partition back to %v", got)
	}

	done, err := ctl.Finalize(ctx)
	if err != nil || !done {
		t.Fatalf("Finalize = %v, %v; want done", done, err)
	}
	cs = getCloneSet(t, c)
	if cs.Spec.UpdateStrategy.Partition != nil || cs.Spec.UpdateStrategy.Paused || cs.Annotations[stsAnn] != "" {
		t.Fatalf("after Finalize partition=%v paused=%v annotations=%v", cs.Spec.UpdateStrategy.Partition,
			cs.Spec.UpdateStrategy.Paused, cs.Annotations)
	}
}

func TestCloneSetFinalizeKeepsFrozenOnCancel(t *testing.T) {
	ctx := context.Background()
	cs := testCloneSet(10, ptr.To(intstr.FromInt32(7)))
	cs.Annotations = map[string]string{stsAnn: ControlInfo(testOwner)}
	c := cloneSetClient(t, cs)
	plan := rolloutsv1beta1.ReleasePlan{BatchPartition: ptr.To[int32](0)}
	done, err := NewCloneSetPartition(c, cloneSetTarget(plan)).Finalize(ctx)
	if err != nil || !done {
		t.Fatalf("Finalize = %v, %v; want done", done, err)
	}
	got := getCloneSet(t, c)
	if p := got.Spec.UpdateStrategy.Partition; p == nil || *p != intstr.FromInt32(7) || got.Annotations[stsAnn] != "" {
		t.Fatalf("partition = %v, annotations = %v; want 7 kept and control-info gone", p, got.Annotations)
	}
}

func TestCloneSetFinalizeWaitResume(t *testing.T) {
	ctx := context.Background()
	cs := testCloneSet(4, ptr.To(intstr.FromInt32(2)))
	c := cloneSetClient(t, cs)
	ctl := NewCloneSetPartition(c, cloneSetTarget(rolloutsv1beta1.ReleasePlan{
		FinalizingPolicy: rolloutsv1beta1.WaitResumeFinalizingPolicyType,
	}))
	for i, want := range []bool{false, false} {
		done, err := ctl.Finalize(ctx)
		if err != nil || done != want {
			t.Fatalf("Finalize #%d = %v, %v; want %v", i, done, err, want)
		}
	}
	cs = getCloneSet(t, c)
	cs.Status.UpdatedReplicas, cs.Status.UpdatedReadyReplicas = 4, 4
	if err := c.Update(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if done, err := ctl.Finalize(ctx); err != nil || !done {
		t.Fatalf("Finalize after roll-out = %v, %v; want done", done, err)
	}
}

func TestCloneSetFinalizeDefaultedPartition(t *testing.T) {
	ctx := context.Background()
	cs := testCloneSet(4, ptr.To(intstr.FromInt32(0)))
	cs.Spec.UpdateStrategy.Paused = false
	cs.Status.UpdatedReplicas, cs.Status.UpdatedReadyReplicas = 4, 4
	c := cloneSetClient(t, cs)
	ctl := NewCloneSetPartition(c, cloneSetTarget(rolloutsv1beta1.ReleasePlan{
		FinalizingPolicy: rolloutsv1beta1.WaitResumeFinalizingPolicyType,
	}))
	if done, err := ctl.Finalize(ctx); err != nil || !done {
		t.Fatalf("Finalize with a partition of 0 = %v, %v; want done at once", done, err)
	}
}

func TestCloneSetRead(t *testing.T) {
	cs := testCloneSet(5, ptr.To(intstr.FromString("100%")))
	cs.Annotations = map[string]string{stsAnn: ControlInfo(testOwner)}
	info, err := NewCloneSetPartition(cloneSetClient(t, cs), cloneSetTarget(rolloutsv1beta1.ReleasePlan{})).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.UpdatedPods.String() != "app=web,pod-template-hash=6b9d4f" {
		t.Errorf("UpdatedPods = %q", info.UpdatedPods)
	}
	info.Object, info.UpdatedPods = nil, nil
	want := WorkloadInfo{Replicas: 5, UpdatedReplicas: 3, UpdatedReadyReplicas: 2, StableRevision: "5d8f7c", UpdateRevision: "6b9d4f",
		RevisionLabelKey: "pod-template-hash", Consistent: true, Controlled: true}
	if diff := cmp.Diff(want, *info); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}
}

func TestCloneSetGone(t *testing.T) {
	ctx := context.Background()
	ctl := NewCloneSetPartition(cloneSetClient(t, testCloneSet(1, nil)), Target{
		Namespace: "ns", Owner: testOwner, Ref: rolloutsv1beta1.ObjectRef{Name: "missing"},
	})
	if _, err := ctl.Read(ctx); !errors.Is(err, ErrWorkloadGone) {
		t.Errorf("Read error = %v, want ErrWorkloadGone", err)
	}
	if done, err := ctl.Finalize(ctx); err != nil || !done {
		t.Errorf("Finalize = %v, %v; want done", done, err)
	}
}

func TestCloneSetBatchPatch(t *testing.T) {
	partition := func(n int64) map[string]any {
		return map[string]any{"spec": map[string]any{"updateStrategy": map[string]any{"partition": n}}}
	}
	tests := []struct {
		name      string
		replicas  int32
		partition *intstr.IntOrString
		desired   int32
		abort     bool
		want      map[string]any
	}{
		{"from 100%", 10, ptr.To(intstr.FromString("100%")), 2, false, partition(8)},
		{"percent rounds up when comparing", 3, ptr.To(intstr.FromString("50%")), 1, false, nil},
		{"percent lowered", 3, ptr.To(intstr.FromString("50%")), 2, false, partition(1)},
		{"no partition: nothing to lower", 3, nil, 1, false, nil},
		{"unreadable partition counts as frozen", 3, ptr.To(intstr.FromString("half")), 1, false, partition(2)},
		{"a partition never rises", 10, ptr.To(intstr.FromInt32(6)), 0, false, nil},
		{"but for an aborted release", 10, ptr.To(intstr.FromInt32(6)), 0, true, partition(10)},
		{"an aborted release already back", 10, ptr.To(intstr.FromInt32(10)), 0, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cloneSetBatchPatch(testCloneSet(tt.replicas, tt.partition), tt.desired, tt.abort)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCloneSetShortHash(t *testing.T) {
	for in, want := range map[string]string{"web-5d8f7c": "5d8f7c", "my-app-abc": "abc", "abc": "abc", "": ""} {
		if got := cloneSetShortHash(in); got != want {
			t.Errorf("cloneSetShortHash(%q) = %q, want %q", in, got, want)
		}
	}
}
