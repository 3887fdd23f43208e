package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestParseResources(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    []target
		wantErr string
	}{
		{name: "cloneset slash", args: []string{"cloneset/a"}, want: []target{{kindCloneSet, "a"}}},
		{name: "cloneset short names", args: []string{"cs/a", "clone/b", "CloneSet/c", "clonesets.apps.kruise.io/d"},
			want: []target{{kindCloneSet, "a"}, {kindCloneSet, "b"}, {kindCloneSet, "c"}, {kindCloneSet, "d"}}},
		{name: "type then names", args: []string{"cs", "a", "b", "a"}, want: []target{{kindCloneSet, "a"}, {kindCloneSet, "b"}}},
		{name: "sts is native", args: []string{"sts/a", "statefulset/b", "StatefulSet/c"},
			want: []target{{kindStatefulSet, "a"}, {kindStatefulSet, "b"}, {kindStatefulSet, "c"}}},
		{name: "advanced statefulset", args: []string{"asts/a", "statefulset.apps.kruise.io/b", "statefulsets.v1beta1.apps.kruise.io/c", "statefulset.v1alpha1.apps.kruise.io/d"},
			want: []target{{kindAdvancedStatefulSet, "a"}, {kindAdvancedStatefulSet, "b"}, {kindAdvancedStatefulSet, "c"}, {kindAdvancedStatefulSet, "d"}}},
		{name: "daemonsets", args: []string{"ds/a", "ads/b", "daemon/c", "daemonsets.apps/d", "daemonset.apps.kruise.io/e"},
			want: []target{{kindDaemonSet, "a"}, {kindAdvancedDaemonSet, "b"}, {kindAdvancedDaemonSet, "c"}, {kindDaemonSet, "d"}, {kindAdvancedDaemonSet, "e"}}},
		{name: "deployments", args: []string{"deploy/a", "deployments.v1.apps/b"}, want: []target{{kindDeployment, "a"}, {kindDeployment, "b"}}},
		{name: "mixed kinds", args: []string{"rollout/a", "cloneset/a"}, want: []target{{kindRollout, "a"}, {kindCloneSet, "a"}}},
		{name: "nothing", wantErr: "required resource not specified"},
		{name: "type only", args: []string{"asts"}, wantErr: "no StatefulSet name given: use asts/NAME or asts NAME"},
		{name: "unknown", args: []string{"pods/a"}, wantErr: `resource type "pods" is not supported`},
		{name: "empty name", args: []string{"cs", ""}, wantErr: "must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseResources(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b *workloadKind) bool { return a == b })); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKindForRef(t *testing.T) {
	tests := []struct {
		ref     rolloutsv1beta1.ObjectRef
		want    *workloadKind
		wantErr string
	}{
		{ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment"}, want: kindDeployment},
		{ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "StatefulSet"}, want: kindStatefulSet},
		{ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet"}, want: kindCloneSet},
		{ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "StatefulSet"}, want: kindAdvancedStatefulSet},
		{ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet"}, want: kindAdvancedStatefulSet},
		{ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet"}, want: kindAdvancedDaemonSet},
		{ref: rolloutsv1beta1.ObjectRef{APIVersion: "batch/v1", Kind: "Job"}, wantErr: "not a supported workload"},
		{ref: rolloutsv1beta1.ObjectRef{APIVersion: "a/b/c", Kind: "Job"}, wantErr: "workloadRef apiVersion"},
	}
	for _, tt := range tests {
		got, err := kindForRef(tt.ref)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error = %v, want %q", tt.ref, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%v: got %v, %v; want %v", tt.ref, got, err, tt.want.Resource)
		}
	}
}

func TestKindNames(t *testing.T) {
	if got := (target{kindDeployment, "web"}).String(); got != `deployments.apps "web"` {
		t.Errorf("String = %q", got)
	}
}
