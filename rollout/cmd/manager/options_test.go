package main

import (
	"flag"
	"strings"
	"testing"

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
