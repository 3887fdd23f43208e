package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTargets(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{name: "slash form", args: []string{"rollout/demo"}, want: []string{"demo"}},
		{name: "plural slash form", args: []string{"rollouts/demo"}, want: []string{"demo"}},
		{name: "qualified", args: []string{"rollouts.rollouts.kruise.io/demo"}, want: []string{"demo"}},
		{name: "qualified singular", args: []string{"rollout.rollouts.kruise.io/demo"}, want: []string{"demo"}},
		{name: "versioned", args: []string{"rollouts.v1alpha1.rollouts.kruise.io/demo"}, want: []string{"demo"}},
		{name: "kind spelling", args: []string{"Rollout/demo"}, want: []string{"demo"}},
		{name: "type then name", args: []string{"rollout", "demo"}, want: []string{"demo"}},
		{name: "type then names", args: []string{"rollouts", "a", "b", "a"}, want: []string{"a", "b"}},
		{name: "several slashes", args: []string{"rollout/a", "rollouts/b"}, want: []string{"a", "b"}},
		{name: "nothing", wantErr: "required resource not specified"},
		{name: "type only", args: []string{"rollout"}, wantErr: "no Rollout name given"},
		{name: "bare name", args: []string{"demo"}, wantErr: `resource type "demo" is not supported`},
		{name: "other kind", args: []string{"deployment/web"}, wantErr: `deployments.apps is not supported here`},
		{name: "cloneset", args: []string{"cloneset", "web"}, wantErr: `clonesets.apps.kruise.io is not supported here`},
		{name: "short name", args: []string{"ro/demo"}, want: []string{"demo"}},
		{name: "empty name", args: []string{"rollout/"}, wantErr: "must have a single resource and name"},
		{name: "two slashes", args: []string{"rollout/a/b"}, wantErr: "must have a single resource and name"},
		{name: "mixed forms", args: []string{"rollout", "rollout/a"}, wantErr: "no need to specify a resource type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTargets(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
}
