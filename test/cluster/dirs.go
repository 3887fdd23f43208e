package cluster

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Temporary directories carry the owner's PID so a later Start can remove
// those left behind by a test binary that was killed before Stop ran.
const (
	clusterDirPrefix = "flotilla-cluster-"
	etcdDirPrefix    = "flotilla-etcd-"
)

func (c *Cluster) makeDirs() error {
	owner := strconv.Itoa(os.Getpid()) + "-"
	var err error
	if c.dir, err = os.MkdirTemp("", clusterDirPrefix+owner); err != nil {
		return fmt.Errorf("cluster dir: %w", err)
	}
	if c.etcdDir, err = os.MkdirTemp(etcdDataRoot(), etcdDirPrefix+owner); err != nil {
		return fmt.Errorf("etcd dir: %w", err)
	}
	c.logDir = filepath.Join(c.dir, "logs")
	for _, dir := range []string{c.logDir, filepath.Join(c.dir, "pki")} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return fmt.Errorf("cluster dir: %w", err)
		}
	}
	return nil
}

func (c *Cluster) removeDirs() error {
	var errs []error
	for _, dir := range []string{c.etcdDir, c.dir} {
		if dir == "" {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// removeStaleDirs deletes cluster and etcd directories whose owning
// process no longer exists. Failures are ignored: this is housekeeping.
func removeStaleDirs() {
	for _, root := range []string{os.TempDir(), etcdDataRoot()} {
		entries, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if pid, ok := ownerPID(e.Name()); ok && !alive(pid) {
				_ = os.RemoveAll(filepath.Join(root, e.Name()))
			}
		}
	}
}

// ownerPID parses the PID out of "<prefix><pid>-<random>".
func ownerPID(name string) (int, bool) {
	for _, prefix := range []string{clusterDirPrefix, etcdDirPrefix} {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		return pid, ok && err == nil && pid > 0
	}
	return 0, false
}

// alive reports whether a process with pid exists (EPERM means it does,
// owned by someone else).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// SaveLogs copies the process logs to a new directory that Stop leaves in
// place, and returns its path: a suite that failed calls it before Stop.
func (c *Cluster) SaveLogs() (string, error) { return c.saveLogs() }

// saveLogs copies the process logs, and the real node's pod logs (the
// manager's among them) under pods/, to a new directory that Stop leaves in
// place, and returns its path.
func (c *Cluster) saveLogs() (string, error) {
	dest, err := os.MkdirTemp("", "flotilla-cluster-logs-")
	if err != nil {
		return "", fmt.Errorf("logs dir: %w", err)
	}
	if err := copyTree(c.logDir, dest); err != nil {
		return "", err
	}
	if c.realNode != nil {
		if err := copyTree(c.realNode.podLogsDir(), filepath.Join(dest, "pods")); err != nil {
			return "", err
		}
	}
	return dest, nil
}

// copyTree copies the regular files under src to the same paths under dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("copy log: %w", err)
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy log: %w", err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("copy log: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy log: %w", err)
	}
	return out.Close()
}
