package control

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// testAdvancedDaemonSet is an Advanced DaemonSet over desired nodes whose controller has observed it.
func testAdvancedDaemonSet(desired int32, partition *intstr.IntOrString, paused *bool, annotations map[string]string) *kruiseappsv1alpha1.DaemonSet {
	return &kruiseappsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "ds-uid", Generation: 3, Annotations: annotations},
		Spec: kruiseappsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			UpdateStrategy: kruiseappsv1alpha1.DaemonSetUpdateStrategy{
				Type:          kruiseappsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &kruiseappsv1alpha1.RollingUpdateDaemonSet{Partition: partition, Paused: paused},
			},
		},
		Status: kruiseappsv1alpha1.DaemonSetStatus{DesiredNumberScheduled: desired, ObservedGeneration: 3, DaemonSetHash: "new"},
	}
}

func rollingUpdatePatch(fields map[string]any) map[string]any {
	return map[string]any{"spec": map[string]any{"updateStrategy": map[string]any{"rollingUpdate": fields}}}
}

func withControlInfo(patch map[string]any) map[string]any {
	patch["metadata"] = map[string]any{"annotations": map[string]any{stsAnn: ControlInfo(testOwner)}}
	return patch
}

func intPartition(n int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(n)) }

func TestAdvancedDaemonSetInitPatch(t *testing.T) {
	ours := map[string]string{stsAnn: ControlInfo(testOwner)}
	tests := []struct {
		name string
		ds   *kruiseappsv1alpha1.DaemonSet
		want map[string]any
	}{
		{"the webhook's freeze becomes desiredNumberScheduled, unpaused", testAdvancedDaemonSet(4, intPartition(32767), ptr.To(true), nil),
			withControlInfo(rollingUpdatePatch(map[string]any{"partition": int64(4), "paused": false}))},
		{"no partition at all is frozen too", testAdvancedDaemonSet(4, nil, nil, nil),
			withControlInfo(rollingUpdatePatch(map[string]any{"partition": int64(4)}))},
		{"nodes not counted yet: 32767", testAdvancedDaemonSet(0, nil, nil, nil),
			withControlInfo(rollingUpdatePatch(map[string]any{"partition": int64(32767)}))},
		{"already frozen at desiredNumberScheduled: only control-info", testAdvancedDaemonSet(4, intPartition(4), ptr.To(false), nil),
			withControlInfo(map[string]any{})},
		{"a partition this release lowered is kept", testAdvancedDaemonSet(4, intPartition(1), nil, ours), map[string]any{}},
		{"a percentage this release lowered is kept", testAdvancedDaemonSet(4, ptr.To(intstr.FromString("50%")), nil, ours), map[string]any{}},
		{"another release's low partition is frozen again", testAdvancedDaemonSet(4, intPartition(0), nil,
			map[string]string{stsAnn: `{"name":"other","uid":"x"}`}), withControlInfo(rollingUpdatePatch(map[string]any{"partition": int64(4)}))},
		{"a paused DaemonSet this release controls is unpaused", testAdvancedDaemonSet(4, intPartition(2), ptr.To(true), ours),
			rollingUpdatePatch(map[string]any{"paused": false})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, advancedDaemonSetInitPatch(tt.ds, Target{Owner: testOwner})); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdvancedDaemonSetBatchPatch(t *testing.T) {
	tests := []struct {
		name    string
		ds      *kruiseappsv1alpha1.DaemonSet
		desired int32
		want    map[string]any
	}{
		{"first batch of 4 nodes", testAdvancedDaemonSet(4, intPartition(4), nil, nil), 1, rollingUpdatePatch(map[string]any{"partition": int64(3)})},
		{"from the webhook's freeze", testAdvancedDaemonSet(4, intPartition(32767), nil, nil), 2, rollingUpdatePatch(map[string]any{"partition": int64(2)})},
		{"last batch", testAdvancedDaemonSet(4, intPartition(1), nil, nil), 4, rollingUpdatePatch(map[string]any{"partition": int64(0)})},
		{"never backwards", testAdvancedDaemonSet(4, intPartition(1), nil, nil), 2, nil},
		{"a node joined: the partition does not grow", testAdvancedDaemonSet(5, intPartition(3), nil, nil), 1, nil},
		{"a percentage counts over desiredNumberScheduled, rounded up", testAdvancedDaemonSet(4, ptr.To(intstr.FromString("60%")), nil, nil), 2,
			rollingUpdatePatch(map[string]any{"partition": int64(2)})},
		{"more than the nodes", testAdvancedDaemonSet(2, intPartition(2), nil, nil), 7, rollingUpdatePatch(map[string]any{"partition": int64(0)})},
		{"no partition holds nothing back", testAdvancedDaemonSet(4, nil, nil, nil), 1, nil},
		{"nodes not counted yet: nothing to lower", testAdvancedDaemonSet(0, intPartition(32767), nil, nil), 1, nil},
		{"an unreadable partition is lowered to the batch", testAdvancedDaemonSet(4, ptr.To(intstr.FromString("x")), nil, nil), 1,
			rollingUpdatePatch(map[string]any{"partition": int64(3)})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, advancedDaemonSetBatchPatch(tt.ds, tt.desired)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdvancedDaemonSetFinalizePatch(t *testing.T) {
	ours := map[string]string{stsAnn: ControlInfo(testOwner)}
	drop := func(patch map[string]any) map[string]any {
		patch["metadata"] = map[string]any{"annotations": map[string]any{stsAnn: nil}}
		return patch
	}
	cancelled := rolloutsv1beta1.ReleasePlan{BatchPartition: ptr.To[int32](0)}
	tests := []struct {
		name string
		ds   *kruiseappsv1alpha1.DaemonSet
		plan rolloutsv1beta1.ReleasePlan
		want map[string]any
	}{
		{"released: partition and pause off, control-info gone", testAdvancedDaemonSet(4, intPartition(1), ptr.To(true), ours), rolloutsv1beta1.ReleasePlan{},
			drop(rollingUpdatePatch(map[string]any{"partition": nil, "paused": false}))},
		{"a partition of 0 is left", testAdvancedDaemonSet(4, intPartition(0), nil, ours), rolloutsv1beta1.ReleasePlan{}, drop(map[string]any{})},
		{"cancelled release stays frozen", testAdvancedDaemonSet(4, intPartition(3), nil, ours), cancelled, drop(map[string]any{})},
		{"another release's DaemonSet is left alone", testAdvancedDaemonSet(4, intPartition(3), nil,
			map[string]string{stsAnn: `{"name":"other","uid":"x"}`}), rolloutsv1beta1.ReleasePlan{}, nil},
		{"done", testAdvancedDaemonSet(4, nil, ptr.To(false), nil), rolloutsv1beta1.ReleasePlan{}, map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, advancedDaemonSetFinalizePatch(tt.ds, Target{Owner: testOwner, Plan: tt.plan})); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdvancedDaemonSetInfo(t *testing.T) {
	pods := []corev1.Pod{dsPod("a", "old", true), dsPod("b", "new", true), dsPod("c", "new", false), dsPod("d", "old", true)}
	ds := testAdvancedDaemonSet(4, intPartition(2), nil, map[string]string{stsAnn: ControlInfo(testOwner)})
	ds.Status.UpdatedNumberScheduled = 2
	got := advancedDaemonSetInfo(ds, pods, Target{Owner: testOwner})
	if got.UpdatedPods.String() != "app=agent,controller-revision-hash=new" {
		t.Errorf("UpdatedPods = %q", got.UpdatedPods)
	}
	got.Object, got.UpdatedPods = nil, nil
	want := WorkloadInfo{Replicas: 4, UpdatedReplicas: 2, UpdatedReadyReplicas: 1, StableRevision: "old", UpdateRevision: "new",
		RevisionLabelKey: "controller-revision-hash", PodsRecreated: true, Consistent: true, Controlled: true}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}

	ds.Spec.UpdateStrategy.RollingUpdate.Type = kruiseappsv1alpha1.InplaceRollingUpdateType
	ds.Generation = 4
	got = advancedDaemonSetInfo(ds, pods, Target{Owner: testOwner})
	if got.PodsRecreated || got.Consistent {
		t.Errorf("in place, generation not observed: PodsRecreated=%v Consistent=%v, want both false", got.PodsRecreated, got.Consistent)
	}
}

func TestAdvancedDaemonSetResumed(t *testing.T) {
	status := func(desired, updated, available int32, observed int64) *kruiseappsv1alpha1.DaemonSet {
		ds := testAdvancedDaemonSet(desired, nil, nil, nil)
		ds.Status.UpdatedNumberScheduled, ds.Status.NumberAvailable, ds.Status.ObservedGeneration = updated, available, observed
		return ds
	}
	onDelete := status(4, 0, 0, 3)
	onDelete.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.OnDeleteDaemonSetStrategyType
	tests := []struct {
		name string
		ds   *kruiseappsv1alpha1.DaemonSet
		want bool
	}{
		{"every node updated and available", status(4, 4, 4, 3), true},
		{"one node still old", status(4, 3, 4, 3), false},
		{"updated but not available", status(4, 4, 3, 3), false},
		{"spec not observed yet", status(4, 4, 4, 2), false},
		{"OnDelete never rolls by itself", onDelete, true},
	}
	for _, tt := range tests {
		if got := advancedDaemonSetResumed(tt.ds); got != tt.want {
			t.Errorf("%s: resumed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRegistryPicksAdvancedDaemonSet(t *testing.T) {
	r := NewRegistry()
	if err := RegisterNative(r, true); err != nil {
		t.Fatal(err)
	}
	for _, style := range []rolloutsv1beta1.RollingStyleType{"", rolloutsv1beta1.PartitionRollingStyle, rolloutsv1beta1.CanaryRollingStyle} {
		ctl, err := r.For(nil, Target{Ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet", Name: "agent"},
			Plan: rolloutsv1beta1.ReleasePlan{RollingStyle: style}})
		if err != nil {
			t.Fatalf("style %q: %v", style, err)
		}
		if _, ok := ctl.(*advancedDaemonSet); !ok {
			t.Errorf("style %q: control %T, want the Advanced DaemonSet's", style, ctl)
		}
	}
	ctl, err := r.For(nil, Target{Ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ctl.(*nativeDaemonSet); !ok {
		t.Errorf("apps/v1 DaemonSet: control %T, want the native DaemonSet's", ctl)
	}
}
