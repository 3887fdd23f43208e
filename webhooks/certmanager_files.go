package webhooks

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// writeServingFiles writes the serving key and certificate into dir,
// skipping files that already hold the wanted content. It reports whether
// anything was written.
func writeServingFiles(dir, certName, keyName string, b Bundle) (bool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("creating cert dir: %w", err)
	}
	// The key goes first: a watcher that reads between the two writes
	// sees a mismatched pair, rejects it and keeps the previous one.
	keyChanged, err := writeFileIfChanged(filepath.Join(dir, keyName), b.Key, 0o600)
	if err != nil {
		return false, err
	}
	certChanged, err := writeFileIfChanged(filepath.Join(dir, certName), b.Cert, 0o644)
	if err != nil {
		return false, err
	}
	return keyChanged || certChanged, nil
}

func writeFileIfChanged(path string, data []byte, mode fs.FileMode) (bool, error) {
	current, err := os.ReadFile(path)
	if err == nil && bytes.Equal(current, data) {
		return false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := writeFileAtomic(path, data, mode); err != nil {
		return false, err
	}
	return true, nil
}

// writeFileAtomic replaces path in one rename, so readers never see a
// partly written file.
func writeFileAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("creating temporary file for %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // gone after a successful rename
	if err := writeAndClose(tmp, data, mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("renaming into %s: %w", path, err)
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
