package main

import (
	"slices"
	"testing"
)

func TestCRDGroups(t *testing.T) {
	all := []string{"rollouts.kruise.io", "apps.kruise.io", "policy.kruise.io"}
	cases := []struct {
		enabled []string
		want    []string
	}{
		{nil, all},
		{[]string{"*"}, all},
		{[]string{"rollout", "cloneset"}, all},
		{[]string{"rollout"}, []string{"rollouts.kruise.io"}},
	}
	for _, tc := range cases {
		if got := crdGroups(tc.enabled); !slices.Equal(got, tc.want) {
			t.Errorf("crdGroups(%v) = %v, want %v", tc.enabled, got, tc.want)
		}
	}
}
