package module

import (
	"errors"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	rolloutKind  = schema.GroupVersionKind{Group: "rollouts.kruise.io", Version: "v1beta1", Kind: "Rollout"}
	cloneSetKind = schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}
	table        = []Module{
		{Name: "rollout", Kinds: []schema.GroupVersionKind{rolloutKind}},
		{Name: "cloneset", Kinds: []schema.GroupVersionKind{cloneSetKind}},
		{Name: "nokinds"},
	}
)

func servedOnly(kinds ...schema.GroupVersionKind) Served {
	return func(gvk schema.GroupVersionKind) (bool, error) {
		for _, k := range kinds {
			if k == gvk {
				return true, nil
			}
		}
		return false, nil
	}
}

func names(ms []Module) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestSelect(t *testing.T) {
	cases := []struct {
		name        string
		enabled     []string
		served      Served
		wantRun     []string
		wantSkipped []Skipped
	}{
		{
			name: "all enabled, all served", served: servedOnly(rolloutKind, cloneSetKind),
			wantRun: []string{"rollout", "cloneset", "nokinds"},
		},
		{
			name: "star enables all", enabled: []string{"*"}, served: servedOnly(rolloutKind, cloneSetKind),
			wantRun: []string{"rollout", "cloneset", "nokinds"},
		},
		{
			name: "missing CRD skips the module", served: servedOnly(rolloutKind),
			wantRun:     []string{"rollout", "nokinds"},
			wantSkipped: []Skipped{{Name: "cloneset", Reason: "kinds not served: CloneSet.apps.kruise.io/v1alpha1"}},
		},
		{
			name: "flag narrows the set", enabled: []string{"rollout"}, served: servedOnly(rolloutKind, cloneSetKind),
			wantRun: []string{"rollout"},
			wantSkipped: []Skipped{
				{Name: "cloneset", Reason: "disabled by --enable-modules"},
				{Name: "nokinds", Reason: "disabled by --enable-modules"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run, skipped, err := Select(table, tc.enabled, tc.served)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(run); !reflect.DeepEqual(got, tc.wantRun) {
				t.Errorf("run = %v, want %v", got, tc.wantRun)
			}
			if !reflect.DeepEqual(skipped, tc.wantSkipped) {
				t.Errorf("skipped = %v, want %v", skipped, tc.wantSkipped)
			}
		})
	}
}

func TestSelectRejectsUnknownModule(t *testing.T) {
	_, _, err := Select(table, []string{"rolout"}, servedOnly())
	if err == nil || err.Error() != `unknown module "rolout" in --enable-modules (known: cloneset, nokinds, rollout)` {
		t.Fatalf("err = %v", err)
	}
}

func TestSelectPropagatesDiscoveryErrors(t *testing.T) {
	boom := errors.New("boom")
	_, _, err := Select(table, nil, func(schema.GroupVersionKind) (bool, error) { return false, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want wrapped boom", err)
	}
}
