package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const (
	modulePath    = "github.com/flotilla-dev/flotilla"
	gatewayModule = "sigs.k8s.io/gateway-api"
	binDirEnv     = "FLOTILLA_BIN_DIR"
)

// RepoRoot walks up from the working directory to the directory whose
// go.mod declares the Flotilla module (test/tools has a go.mod of its own).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if moduleOf(filepath.Join(dir, "go.mod")) == modulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// moduleOf returns the module path declared in a go.mod, "" if unreadable.
func moduleOf(goMod string) string {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return ""
	}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(scanner.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// resolveBinDir applies the BinDir default: $FLOTILLA_BIN_DIR, else <repo>/bin.
func resolveBinDir(binDir string) (string, error) {
	if binDir == "" {
		binDir = os.Getenv(binDirEnv)
	}
	if binDir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		binDir = filepath.Join(root, "bin")
	}
	return filepath.Abs(binDir)
}

// findBinaries checks that every named binary exists in binDir.
func findBinaries(binDir string, names []string) error {
	var missing []string
	for _, name := range names {
		if info, err := os.Stat(filepath.Join(binDir, name)); err != nil || info.IsDir() {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s in %s (run `make tools`, or set %s)",
			strings.Join(missing, ", "), binDir, binDirEnv)
	}
	return nil
}

// defaultCRDDirs is the chart's CRD directory.
func defaultCRDDirs() ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(root, "charts", "flotilla", "crds")}, nil
}

// gatewayCRDDir locates the standard-channel CRDs shipped in the
// gateway-api module that go.mod requires.
func gatewayCRDDir() (string, error) {
	modDir, err := moduleDir(gatewayModule)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(modDir, "config", "crd", "standard")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("gateway API CRDs: %w", err)
	}
	return dir, nil
}

// moduleDir asks the go command where a required module lives, falling
// back to GOMODCACHE and the version pinned in go.mod.
func moduleDir(module string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil && len(bytes.TrimSpace(out)) > 0 {
		return string(bytes.TrimSpace(out)), nil
	}
	return moduleCacheDir(root, module)
}

func moduleCacheDir(root, module string) (string, error) {
	version := requiredVersion(filepath.Join(root, "go.mod"), module)
	if version == "" {
		return "", fmt.Errorf("%s is not required in go.mod", module)
	}
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", errors.New("GOMODCACHE unset and no home directory")
		}
		cache = filepath.Join(home, "go", "pkg", "mod")
	}
	dir := filepath.Join(cache, module+"@"+version)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("module %s: %w", module, err)
	}
	return dir, nil
}

// requiredVersion finds module's version in a go.mod require line.
func requiredVersion(goMod, module string) string {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fields) >= 2 && fields[0] == module {
			return fields[1]
		}
	}
	return ""
}
