package cluster

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
)

// RunPackage is a whole TestMain for a package with integration tests: with -short it runs only the pure
// tests and leaves *cfg nil (the integration tests then skip); otherwise it runs them against one cluster
// started with opts and points *cfg at it. Relative CRDDirs are taken from the repository root; nil
// CRDDirs installs Flotilla's CRDs.
//
//	func TestMain(m *testing.M) {
//		os.Exit(cluster.RunPackage(m, cluster.Options{CRDDirs: []string{"charts/flotilla/crds"}}, &cfg))
//	}
func RunPackage(m *testing.M, opts Options, cfg **rest.Config) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() {
		return m.Run()
	}
	dirs, err := fromRepoRoot(opts.CRDDirs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts.CRDDirs = dirs
	return RunTests(m, opts, func(c *Cluster) { *cfg = c.Config() })
}

// fromRepoRoot resolves relative directories; nil stays nil (Options' default CRDs).
func fromRepoRoot(dirs []string) ([]string, error) {
	if dirs == nil {
		return nil, nil
	}
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			root, err := RepoRoot()
			if err != nil {
				return nil, err
			}
			d = filepath.Join(root, d)
		}
		out = append(out, d)
	}
	return out, nil
}
