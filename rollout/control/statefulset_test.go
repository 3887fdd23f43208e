package control

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

var testOwner = metav1.OwnerReference{
	APIVersion: "rollouts.kruise.io/v1beta1", Kind: "BatchRelease", Name: "br", UID: "br-uid", Controller: ptr.To(true),
}

const stsAnn = rolloutsv1beta1.BatchReleaseControlAnnotation

// sts builds a StatefulSet-like object of apiVersion/kind; spec and status are merged in as given.
func sts(apiVersion, kind string, spec, status map[string]any, annotations map[string]any) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": "web", "namespace": "ns", "generation": int64(2)},
	}
	if annotations != nil {
		obj["metadata"].(map[string]any)["annotations"] = annotations
	}
	if spec != nil {
		obj["spec"] = spec
	}
	if status != nil {
		obj["status"] = status
	}
	return &unstructured.Unstructured{Object: obj}
}

func partitionSpec(replicas, partition any) map[string]any {
	spec := map[string]any{"replicas": replicas}
	if partition != nil {
		spec["updateStrategy"] = map[string]any{"rollingUpdate": map[string]any{"partition": partition}}
	}
	return spec
}

func ourControl() map[string]any { return map[string]any{stsAnn: ControlInfo(testOwner)} }

func TestStatefulSetInitPatch(t *testing.T) {
	frozen := func() map[string]any {
		return map[string]any{"spec": map[string]any{"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"partition": int64(32767)}}}}
	}
	withInfo := func(m map[string]any) map[string]any {
		m["metadata"] = map[string]any{"annotations": map[string]any{stsAnn: ControlInfo(testOwner)}}
		return m
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want map[string]any
	}{
		{
			name: "native StatefulSet without partition",
			obj:  sts("apps/v1", "StatefulSet", map[string]any{"replicas": int64(4)}, nil, nil),
			want: withInfo(frozen()),
		},
		{
			name: "partition already frozen: only control-info",
			obj:  sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(32767)), nil, nil),
			want: withInfo(map[string]any{}),
		},
		{
			name: "another release's low partition is frozen again",
			obj:  sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(0)), nil, map[string]any{stsAnn: `{"name":"other","uid":"x"}`}),
			want: withInfo(frozen()),
		},
		{
			name: "a partition this release lowered is kept",
			obj:  sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(2)), nil, ourControl()),
			want: map[string]any{},
		},
		{
			name: "Advanced StatefulSet v1beta1 is unpaused",
			obj: sts("apps.kruise.io/v1beta1", "StatefulSet", map[string]any{"updateStrategy": map[string]any{
				"rollingUpdate": map[string]any{"partition": int64(32767), "paused": true},
			}}, nil, ourControl()),
			want: map[string]any{"spec": map[string]any{"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"paused": false}}}},
		},
		{
			name: "Advanced StatefulSet v1alpha1 without paused gets paused=false",
			obj:  sts("apps.kruise.io/v1alpha1", "StatefulSet", partitionSpec(int64(3), int64(32767)), nil, ourControl()),
			want: map[string]any{"spec": map[string]any{"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"paused": false}}}},
		},
		{
			name: "custom StatefulSet-like kind: no paused field",
			obj:  sts("example.com/v1", "GameServerSet", nil, nil, nil),
			want: withInfo(frozen()),
		},
		{
			name: "malformed updateStrategy is replaced, not a panic",
			obj:  sts("example.com/v1", "GameServerSet", map[string]any{"updateStrategy": "bogus"}, nil, ourControl()),
			want: frozen(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := statefulSetInitPatch(tt.obj, Target{Owner: testOwner})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatefulSetBatchPatch(t *testing.T) {
	partition := func(n int64) map[string]any {
		return map[string]any{"spec": map[string]any{"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"partition": n}}}}
	}
	tests := []struct {
		name    string
		obj     *unstructured.Unstructured
		desired int32
		unmoved int32
		want    map[string]any
	}{
		{"first batch", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(32767)), nil, nil), 1, 0, partition(3)},
		{"next batch", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(3)), nil, nil), 2, 0, partition(2)},
		{"never backwards", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(2)), nil, nil), 1, 0, nil},
		{"same batch again", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(2)), nil, nil), 2, 0, nil},
		{"more than replicas", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(2)), nil, nil), 9, 0, partition(0)},
		{"negative desired", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(32767)), nil, nil), -3, 0, partition(4)},
		{"replicas default to 1", sts("apps/v1", "StatefulSet", map[string]any{"updateStrategy": map[string]any{
			"rollingUpdate": map[string]any{"partition": int64(32767)}}}, nil, nil), 1, 0, partition(0)},
		{"no partition: not frozen, nothing to lower", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), nil), nil, nil), 1, 0, nil},
		{"float partition from a loose decoder", sts("example.com/v1", "Foo", partitionSpec(float64(4), float64(32767)), nil, nil), 2, 0, partition(2)},
		{"no spec at all", sts("example.com/v1", "Foo", nil, nil, nil), 2, 0, nil},
		{"rollback in batches: two pods never left, one of the two others goes back", sts("apps/v1", "StatefulSet",
			partitionSpec(int64(4), int64(32767)), nil, nil), 3, 2, partition(3)},
		{"rollback in batches: the last batch", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(3)), nil, nil), 4, 2, partition(2)},
		{"rollback in batches: more unmoved than desired", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(32767)), nil, nil), 1, 3, partition(4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := statefulSetBatchPatch(tt.obj, Batch{DesiredUpdated: tt.desired, Unmoved: tt.unmoved})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatefulSetFinalizePatch(t *testing.T) {
	released := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{stsAnn: nil}},
		"spec":     map[string]any{"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"partition": nil}}},
	}
	onlyInfo := map[string]any{"metadata": map[string]any{"annotations": map[string]any{stsAnn: nil}}}
	cancelled := rolloutsv1beta1.ReleasePlan{BatchPartition: ptr.To[int32](1)}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		t    Target
		want map[string]any
	}{
		{"complete", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(2)), nil, ourControl()), Target{Owner: testOwner}, released},
		{"cancelled at a batch keeps the partition", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(2)), nil, ourControl()),
			Target{Owner: testOwner, Plan: cancelled}, onlyInfo},
		{"already released", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), nil), nil, nil), Target{Owner: testOwner}, map[string]any{}},
		{"partition defaulted to 0 counts as released", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(0)), nil, nil),
			Target{Owner: testOwner}, map[string]any{}},
		{"a partition of another type is removed", sts("example.com/v1", "Foo", partitionSpec(int64(4), "2"), nil, nil),
			Target{Owner: testOwner}, map[string]any{"spec": map[string]any{"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"partition": nil}}}}},
		{"another release's workload is left alone", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(2)), nil,
			map[string]any{stsAnn: `{"kind":"BatchRelease","name":"other","uid":"other"}`}), Target{Owner: testOwner}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := statefulSetFinalizePatch(tt.obj, tt.t)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatefulSetInfo(t *testing.T) {
	selector := map[string]any{"matchLabels": map[string]any{"app": "web"}}
	tests := []struct {
		name        string
		obj         *unstructured.Unstructured
		want        WorkloadInfo
		wantPods    string
		countsReady bool
	}{
		{
			name: "native StatefulSet mid-release",
			obj: sts("apps/v1", "StatefulSet", map[string]any{"replicas": int64(4), "selector": selector},
				map[string]any{"observedGeneration": int64(2), "updatedReplicas": int64(1), "currentRevision": "web-1", "updateRevision": "web-2"},
				ourControl()),
			want: WorkloadInfo{Replicas: 4, UpdatedReplicas: 1, StableRevision: "web-1", UpdateRevision: "web-2",
				RevisionLabelKey: "controller-revision-hash", Consistent: true, Controlled: true},
			wantPods:    "app=web,controller-revision-hash=web-2",
			countsReady: true,
		},
		{
			name: "Advanced StatefulSet reports updatedReadyReplicas",
			obj: sts("apps.kruise.io/v1beta1", "StatefulSet", map[string]any{"replicas": int64(4), "selector": selector},
				map[string]any{"observedGeneration": int64(1), "updatedReplicas": int64(2), "updatedReadyReplicas": int64(1),
					"currentRevision": "web-1", "updateRevision": "web-2"}, nil),
			want: WorkloadInfo{Replicas: 4, UpdatedReplicas: 2, UpdatedReadyReplicas: 1, StableRevision: "web-1",
				UpdateRevision: "web-2", RevisionLabelKey: "controller-revision-hash"},
			wantPods: "app=web,controller-revision-hash=web-2",
		},
		{
			name:        "bare custom resource: defaults, no selector selects nothing",
			obj:         sts("example.com/v1", "Foo", nil, nil, nil),
			want:        WorkloadInfo{Replicas: 1, RevisionLabelKey: "controller-revision-hash"},
			countsReady: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := readStatefulSetState(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			got := statefulSetInfo(tt.obj, st, Target{Owner: testOwner})
			if got.UpdatedPods.String() != tt.wantPods {
				t.Errorf("UpdatedPods = %q, want %q", got.UpdatedPods, tt.wantPods)
			}
			if tt.wantPods == "" && got.UpdatedPods.Matches(labels.Set{"app": "web"}) {
				t.Error("UpdatedPods matches pods although it should select nothing")
			}
			if (st.updatedReadyReplicas == nil) != tt.countsReady {
				t.Errorf("counts ready pods = %v, want %v", st.updatedReadyReplicas == nil, tt.countsReady)
			}
			got.Object, got.UpdatedPods = nil, nil
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("info (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadStatefulSetStateRejectsBadSelector(t *testing.T) {
	obj := sts("example.com/v1", "Foo", map[string]any{"selector": "app=web"}, nil, nil)
	if _, err := readStatefulSetState(obj); err == nil {
		t.Error("want an error for a selector that is not an object")
	}
	obj = sts("example.com/v1", "Foo", map[string]any{"selector": map[string]any{"matchLabels": "x"}}, nil, nil)
	if _, err := readStatefulSetState(obj); err == nil {
		t.Error("want an error for a selector of the wrong shape")
	}
}

func TestStatefulSetResumed(t *testing.T) {
	tests := []struct {
		name string
		st   statefulSetState
		want bool
	}{
		{"all updated, revisions converged", statefulSetState{replicas: 4, updatedReplicas: 4, currentRevision: "b", updateRevision: "b"}, true},
		{"all updated, current not yet moved", statefulSetState{replicas: 4, updatedReplicas: 4, currentRevision: "a", updateRevision: "b"}, false},
		{"updated ready reported", statefulSetState{replicas: 4, updatedReplicas: 4, updatedReadyReplicas: ptr.To[int32](4),
			currentRevision: "a", updateRevision: "b"}, true},
		{"not observed", statefulSetState{replicas: 4, generation: 3, observedGeneration: 2, updatedReplicas: 4,
			currentRevision: "b", updateRevision: "b"}, false},
		{"half way", statefulSetState{replicas: 4, updatedReplicas: 2, updatedReadyReplicas: ptr.To[int32](2)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := statefulSetResumed(tt.st); got != tt.want {
				t.Errorf("statefulSetResumed = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestStatefulSetPlanOddObjects feeds objects with fields of the wrong shape through every pure step: each
// must answer, none may panic.
func TestStatefulSetPlanOddObjects(t *testing.T) {
	odd := []map[string]any{
		{"apiVersion": "example.com/v1", "kind": "Foo"},
		{"apiVersion": "example.com/v1", "kind": "Foo", "metadata": "x", "spec": "x", "status": "x"},
		{"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "metadata": map[string]any{"annotations": 3},
			"spec":   map[string]any{"replicas": "four", "updateStrategy": map[string]any{"rollingUpdate": []any{1}}},
			"status": map[string]any{"updatedReplicas": true, "updateRevision": 7, "updatedReadyReplicas": "x"}},
		{"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": map[string]any{"replicas": float64(1e30),
			"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"partition": -5}}}},
	}
	for i, m := range odd {
		obj := &unstructured.Unstructured{Object: m}
		target := Target{Owner: testOwner, Plan: rolloutsv1beta1.ReleasePlan{FinalizingPolicy: "WaitResume"}}
		st, _ := readStatefulSetState(obj)
		_ = statefulSetInfo(obj, st, target)
		_ = statefulSetResumed(st)
		_ = statefulSetInitPatch(obj, target)
		_ = statefulSetFinalizePatch(obj, target)
		if p := statefulSetBatchPatch(obj, Batch{DesiredUpdated: 2}); p != nil {
			if n, _ := nestedInt(p, partitionPath...); n < 0 {
				t.Errorf("object %d: negative partition %d", i, n)
			}
		}
	}
}
