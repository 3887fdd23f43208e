package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestParsePodNames(t *testing.T) {
	got, err := parsePodNames(" a, b,,a ,c")
	if err != nil || !cmp.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := parsePodNames(" , "); err == nil || err.Error() != "must specify one pod name" {
		t.Errorf("error = %v", err)
	}
}

func TestPlanScaleDown(t *testing.T) {
	listed := func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-a"} }
	tests := []struct {
		name         string
		cs           *unstructured.Unstructured
		pods         []string
		wantReplicas int64
		wantDelete   []string
		wantPatch    string
		wantErr      string
	}{
		{name: "two pods", cs: testCloneSet(t), pods: []string{"web-a", "web-b"}, wantReplicas: 3, wantDelete: []string{"web-a", "web-b"},
			wantPatch: `{"metadata":{"resourceVersion":"7"},"spec":{"replicas":3,"scaleStrategy":{"podsToDelete":["web-a","web-b"]}}}`},
		{name: "a pod already listed counts once", cs: testCloneSet(t, listed), pods: []string{"web-a", "web-c"}, wantReplicas: 4,
			wantDelete: []string{"web-a", "web-c"}},
		{name: "all already listed", cs: testCloneSet(t, listed), pods: []string{"web-a"},
			wantErr: "already deletes pods [web-a] (spec.scaleStrategy.podsToDelete)"},
		{name: "more pods than replicas", cs: testCloneSet(t, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](1) }),
			pods: []string{"a", "b"}, wantErr: "cannot delete 2 pods: spec.replicas is 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := planScaleDown(tt.cs, tt.pods)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			replicas, _, _ := unstructured.NestedInt64(e.Preview.Object, "spec", "replicas")
			del, _, _ := unstructured.NestedStringSlice(e.Preview.Object, "spec", "scaleStrategy", "podsToDelete")
			if replicas != tt.wantReplicas || !cmp.Equal(del, tt.wantDelete) {
				t.Errorf("replicas %d, podsToDelete %v", replicas, del)
			}
			if tt.wantPatch != "" && string(e.Patch) != tt.wantPatch {
				t.Errorf("patch = %s", e.Patch)
			}
		})
	}
}

func TestScaleHelpers(t *testing.T) {
	e, err := scalePatch(3, "")
	if err != nil || string(e.Patch) != `{"spec":{"replicas":3}}` {
		t.Errorf("patch %s, %v", e.Patch, err)
	}
	e, _ = scalePatch(0, "12")
	if string(e.Patch) != `{"metadata":{"resourceVersion":"12"},"spec":{"replicas":0}}` {
		t.Errorf("patch %s", e.Patch)
	}
	scale := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(2)}}}
	if err := checkScale(scale, 2); err != nil {
		t.Error(err)
	}
	if err := checkScale(scale, -1); err != nil {
		t.Error(err)
	}
	if err := checkScale(scale, 3); err == nil || err.Error() != "expected replicas to be 3, was 2" {
		t.Errorf("error = %v", err)
	}
}
