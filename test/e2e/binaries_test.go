package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// built holds the binaries the suite built from this checkout, by package; a fresh clone has no bin/
// copies, and stale ones would test old code.
var built struct {
	sync.Mutex
	dir   string
	paths map[string]string
}

// binaryOf builds the command package pkg (e.g. ./nodeagent/cmd/nodeagent) once per suite run and returns
// its path.
func binaryOf(ctx context.Context, pkg, name string) string {
	built.Lock()
	defer built.Unlock()
	if p, ok := built.paths[pkg]; ok {
		return p
	}
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "flotilla-e2e-bin-")
		Expect(err).NotTo(HaveOccurred())
		built.dir, built.paths = dir, map[string]string{}
	}
	root, err := cluster.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	out := filepath.Join(built.dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	log, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "building %s: %s", pkg, log)
	built.paths[pkg] = out
	return out
}

// removeBuilt deletes what binaryOf built; the suite calls it once at the end.
func removeBuilt() {
	built.Lock()
	defer built.Unlock()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}
