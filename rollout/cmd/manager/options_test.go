package main

import (
	"flag"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/flotilla-dev/flotilla/rollout/feature"
)

func TestLeaderElectionFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string // a part of the error; empty: valid
	}{
		{nil, ""},
		{[]string{"--leader-election-lease-duration=6s", "--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s"}, ""},
		{[]string{"--leader-election-renew-deadline=20s"}, "--leader-election-lease-duration=15s: must be longer than --leader-election-renew-deadline=20s"},
		{[]string{"--leader-election-retry-period=9s"}, "--leader-election-renew-deadline=10s: must be longer than 1.2 × --leader-election-retry-period=9s"},
		{[]string{"--leader-election-retry-period=0s"}, "--leader-election-retry-period=0s: must be positive"},
		{[]string{"--partition-percent-limit=0"}, "--partition-percent-limit=0: must be between 1 and 100"},
		{[]string{"--partition-percent-limit=80", "--filter-workload-type=false"}, ""},
	}
	for _, tt := range tests {
		gates, err := feature.NewGate()
		if err != nil {
			t.Fatal(err)
		}
		opts := options{featureGates: gates}
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		opts.bind(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		err = opts.validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: error %v, want one containing %q", tt.args, err, tt.want)
		}
	}
}

// The configuration ConfigMap is read, and its namespace's ConfigMaps cached, from --configuration-namespace
// (upstream's kruise-rollout for a user moving over), else from the manager's own namespace.
func TestConfigurationNamespace(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--webhook-namespace=flotilla-system"}, "flotilla-system"},
		{[]string{"--webhook-namespace=flotilla-system", "--configuration-namespace=kruise-rollout"}, "kruise-rollout"},
	} {
		gates, err := feature.NewGate()
		if err != nil {
			t.Fatal(err)
		}
		opts := options{featureGates: gates}
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		opts.bind(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if got := opts.configurationNamespace(); got != tt.want {
			t.Errorf("%v: configuration namespace %q, want %q", tt.args, got, tt.want)
		}
		var cached cache.ByObject
		for obj, byObject := range cacheOptions(opts).ByObject {
			if _, ok := obj.(*corev1.ConfigMap); ok {
				cached = byObject
			}
		}
		if _, ok := cached.Namespaces[tt.want]; !ok || len(cached.Namespaces) != 1 {
			t.Errorf("%v: ConfigMaps cached from %v, want %s only", tt.args, cached.Namespaces, tt.want)
		}
	}
}

func TestGCPercentDefault(t *testing.T) {
	for env, want := range map[string]int{"": defaultGCPercent, "200": 200, "off": -1, "x": defaultGCPercent} {
		t.Setenv("GOGC", env)
		if got := gcPercentDefault(); got != want {
			t.Errorf("GOGC=%q: %d, want %d", env, got, want)
		}
	}
}
