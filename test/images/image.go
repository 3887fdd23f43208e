package images

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Spec describes one single-layer image.
type Spec struct {
	// Files go into the layer, each at its Path (absolute, e.g. /flotilla-manager).
	Files []File
	// Entrypoint and Cmd are the image's; Entrypoint usually names one of Files.
	Entrypoint, Cmd []string
	// User runs the entrypoint, numeric ("65532:65532") so runAsNonRoot can check it; empty is root.
	User string
	// Env holds KEY=value pairs.
	Env []string
	// Labels go into the config (docker inspect, crictl inspecti show them).
	Labels map[string]string
	// Created is the image's creation time and every file's modification time; the zero value is the Unix epoch.
	Created time.Time
	// Arch is the platform's architecture; empty is the one this program runs on.
	Arch string
}

// File is one regular file of the layer.
type File struct {
	// Path is where the file is in the image.
	Path string
	// Source is the local file to copy; Content is used when Source is empty.
	Source  string
	Content []byte
	// Mode is the permission bits; 0 means 0o755 (binaries).
	Mode int64
}

// Build assembles the image: an OCI manifest and config over one gzip layer.
func Build(spec Spec) (v1.Image, error) {
	layerTar, err := layerBytes(spec.Files, spec.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	return mutate.ConfigFile(img, configFile(spec, img))
}

// configFile is the image config; the rootfs diff IDs come from img, which already holds the layer.
func configFile(spec Spec, img v1.Image) *v1.ConfigFile {
	cfg, _ := img.ConfigFile() // computed from the layer in memory, it cannot fail after AppendLayers
	arch := spec.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = arch, "linux"
	cfg.Created = v1.Time{Time: spec.Created.UTC()}
	cfg.History = nil
	cfg.Config = v1.Config{
		Entrypoint: spec.Entrypoint, Cmd: spec.Cmd, User: spec.User, Env: spec.Env, Labels: spec.Labels,
		WorkingDir: "/",
	}
	return cfg
}

// layerBytes writes the files as a tar in path order, owned by root, dated modTime, with their parent
// directories, so the bytes depend on the files' contents only.
func layerBytes(files []File, modTime time.Time) ([]byte, error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		if err := writeParents(tw, f.Path, modTime, dirs); err != nil {
			return nil, err
		}
		if err := writeFile(tw, f, modTime); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	return buf.Bytes(), nil
}

// writeParents adds the directory entries above p that are not in the tar yet.
func writeParents(tw *tar.Writer, p string, modTime time.Time, done map[string]bool) error {
	var parents []string
	for dir := path.Dir(path.Clean("/" + p)); dir != "/"; dir = path.Dir(dir) {
		parents = append(parents, dir)
	}
	slices.Reverse(parents)
	for _, dir := range parents {
		if done[dir] {
			continue
		}
		done[dir] = true
		hdr := &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(dir, "/") + "/", Mode: 0o755, ModTime: modTime}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("image layer: %w", err)
		}
	}
	return nil
}

func writeFile(tw *tar.Writer, f File, modTime time.Time) error {
	data := f.Content
	if f.Source != "" {
		var err error
		if data, err = os.ReadFile(f.Source); err != nil {
			return fmt.Errorf("image file %s: %w", f.Path, err)
		}
	}
	mode := f.Mode
	if mode == 0 {
		mode = 0o755
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(path.Clean("/"+f.Path), "/"), Mode: mode,
		Size: int64(len(data)), ModTime: modTime}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("image file %s: %w", f.Path, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("image file %s: %w", f.Path, err)
	}
	return nil
}
