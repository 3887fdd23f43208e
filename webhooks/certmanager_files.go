package webhooks

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The serving pair lives in a directory of its own that the link dataLink names; the two names the webhook
// server reads are links through dataLink. A new pair is written into a new directory and dataLink swapped to
// it in one rename, so no reader ever gets the certificate of one pair with the key of another (controller-
// runtime's certificate watcher logs such a read as an error, at every start and rotation when the files were
// replaced one by one). Projected volumes in a pod use the same layout.
const (
	dataLink   = "..data"
	pairPrefix = "..pair-"
	linkPrefix = ".link-"
)

// writeServingFiles writes the serving key and certificate into dir, unless dir already serves them. It
// reports whether anything was written.
func writeServingFiles(dir, certName, keyName string, b Bundle) (bool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("creating cert dir: %w", err)
	}
	if serves(dir, certName, b.Cert) && serves(dir, keyName, b.Key) {
		return false, nil
	}
	pair, err := writePair(dir, certName, keyName, b)
	if err != nil {
		return false, err
	}
	if err := replaceWithLink(dir, dataLink, pair); err != nil {
		return false, errors.Join(err, os.RemoveAll(filepath.Join(dir, pair)))
	}
	for _, name := range []string{keyName, certName} {
		if err := replaceWithLink(dir, name, filepath.Join(dataLink, name)); err != nil {
			return false, err
		}
	}
	return true, sweep(dir, pair)
}

// sweep removes every pair directory but keep, and what an interrupted write left: the previous pair's files
// going is what tells a watcher of them to read again.
func sweep(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading cert dir: %w", err)
	}
	var errs []error
	for _, e := range entries {
		stale := (strings.HasPrefix(e.Name(), pairPrefix) && e.Name() != keep) || strings.HasPrefix(e.Name(), linkPrefix)
		if stale && e.IsDir() {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// serves reports whether name in dir is a link through dataLink to data.
func serves(dir, name string, data []byte) bool {
	target, err := os.Readlink(filepath.Join(dir, name))
	if err != nil || target != filepath.Join(dataLink, name) {
		return false
	}
	current, err := os.ReadFile(filepath.Join(dir, name))
	return err == nil && bytes.Equal(current, data)
}

// writePair writes both files into a new directory of dir and returns its name.
func writePair(dir, certName, keyName string, b Bundle) (string, error) {
	pair, err := os.MkdirTemp(dir, pairPrefix)
	if err != nil {
		return "", fmt.Errorf("creating a directory for the serving pair: %w", err)
	}
	err = errors.Join(writeNew(filepath.Join(pair, keyName), b.Key, 0o600),
		writeNew(filepath.Join(pair, certName), b.Cert, 0o644))
	if err != nil {
		return "", errors.Join(err, os.RemoveAll(pair))
	}
	return filepath.Base(pair), nil
}

func writeNew(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if err := writeAndClose(f, data, mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// replaceWithLink makes name in dir a link to target in one rename (whatever name was before).
func replaceWithLink(dir, name, target string) error {
	path := filepath.Join(dir, name)
	if current, err := os.Readlink(path); err == nil && current == target {
		return nil
	}
	tmp, err := os.MkdirTemp(dir, linkPrefix)
	if err != nil {
		return fmt.Errorf("linking %s: %w", path, err)
	}
	defer os.RemoveAll(tmp)
	link := filepath.Join(tmp, name)
	if err := os.Symlink(target, link); err != nil {
		return fmt.Errorf("linking %s: %w", path, err)
	}
	if err := os.Rename(link, path); err != nil {
		return fmt.Errorf("linking %s: %w", path, err)
	}
	return nil
}

func writeAndClose(f *os.File, data []byte, mode fs.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// ensurePlaceholderFiles writes a throwaway certificate when dir holds no
// usable pair. The webhook server refuses to start without one, and it
// starts before the CertManager's first sync; the placeholder is trusted by
// nobody and is replaced by that sync, before readiness is reported.
func (m *CertManager) ensurePlaceholderFiles() error {
	certPath := filepath.Join(m.opts.CertDir, m.opts.CertName)
	keyPath := filepath.Join(m.opts.CertDir, m.opts.KeyName)
	if _, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil {
		return nil
	}
	b, _, err := RenewBundle(m.opts.Clock, Bundle{}, m.certConfig())
	if err != nil {
		return err
	}
	_, err = writeServingFiles(m.opts.CertDir, m.opts.CertName, m.opts.KeyName, b)
	return err
}
