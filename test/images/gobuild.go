package images

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
)

// GoBuild compiles the command package pkg (e.g. ./rollout/cmd/manager) of the module at root into out as a
// static Linux binary for arch (empty: this machine's). -trimpath and no VCS stamp keep the bytes
// independent of the checkout's path and state, so the image built from them is reproducible.
func GoBuild(ctx context.Context, root, pkg, out, arch string) error {
	if arch == "" {
		arch = runtime.GOARCH
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, b)
	}
	return nil
}
