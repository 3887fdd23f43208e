package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestHelpGolden pins every command's help text, the user-facing contract of names, flags and exit codes.
func TestHelpGolden(t *testing.T) {
	// The default of --cache-dir comes from the environment.
	t.Setenv("KUBECACHEDIR", "/home/user/.kube/cache")
	commands := [][]string{
		{}, {"rollout"}, {"rollout", "approve"}, {"rollout", "pause"}, {"rollout", "resume"},
		{"rollout", "status"}, {"rollout", "restart"}, {"rollout", "history"}, {"rollout", "undo"}, {"rollout", "rollback"}, {"rollout", "retry"},
		{"set"}, {"set", "image"}, {"set", "env"}, {"set", "resources"}, {"scale"}, {"scaledown"}, {"migrate"},
		{"describe"}, {"describe", "rollout"}, {"create"}, {"create", "job"}, {"create", "broadcastJob"}, {"create", "ContainerRecreateRequest"},
		{"version"}, {"options"}, {"completion"},
	}
	for _, args := range commands {
		name := "help/" + strings.Join(append([]string{"kubectl-kruise"}, args...), "_") + ".golden"
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}
			code := run(context.Background(), append(args, "--help"), streams, defaultDeps())
			if code != 0 || errOut.Len() > 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut.String())
			}
			checkGolden(t, name, out.String())
		})
	}
}
