package images

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations of the archive's index entry that name the image: containerd (ctr import, docker load of an
// OCI archive) reads the full reference, the OCI spec's ref.name carries the tag.
const (
	annotationImageName = "io.containerd.image.name"
	annotationRefName   = "org.opencontainers.image.ref.name"
)

// WriteArchive writes img, named ref, as an OCI image layout archive at path, replacing the file.
func WriteArchive(path string, ref name.Tag, img v1.Image) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	if err := writeArchive(f, ref, img); err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("archive %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// writeArchive writes the layout: oci-layout, the blobs (config, layers, manifest) and index.json, plus
// the manifest.json of `docker save`, so Docker engines without OCI archive support load it too.
func writeArchive(w io.Writer, ref name.Tag, img v1.Image) error {
	tw := tar.NewWriter(w)
	a := archiveWriter{tw: tw}
	a.file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	configName := a.blob(config)
	layers, err := a.layers(img)
	if err != nil {
		return err
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	a.blob(manifest)
	a.json("index.json", index(ref, manifest))
	a.json("manifest.json", []dockerManifest{{Config: configName, RepoTags: []string{ref.String()}, Layers: layers}})
	if a.err != nil {
		return a.err
	}
	return tw.Close()
}

// index is the layout's index.json with one entry: the image's manifest, named by ref.
func index(ref name.Tag, manifest []byte) v1.IndexManifest {
	digest, size, _ := v1.SHA256(bytes.NewReader(manifest))
	return v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: types.OCIManifestSchema1, Digest: digest, Size: size,
			Annotations: map[string]string{annotationImageName: ref.String(), annotationRefName: ref.TagStr()},
		}},
	}
}

// dockerManifest is one entry of `docker save`'s manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// archiveWriter writes tar entries with fixed metadata and keeps the first error.
type archiveWriter struct {
	tw  *tar.Writer
	err error
}

// blob writes data under blobs/sha256/ and returns its path in the archive.
func (a *archiveWriter) blob(data []byte) string {
	digest, _, _ := v1.SHA256(bytes.NewReader(data))
	p := "blobs/sha256/" + digest.Hex
	a.file(p, data)
	return p
}

func (a *archiveWriter) layers(img v1.Image) ([]string, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(layers))
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			return nil, err
		}
		paths = append(paths, a.blob(data))
	}
	return paths, nil
}

func (a *archiveWriter) json(p string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		a.err = err
		return
	}
	a.file(p, data)
}

func (a *archiveWriter) file(p string, data []byte) {
	if a.err != nil {
		return
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0)}
	if a.err = a.tw.WriteHeader(hdr); a.err == nil {
		_, a.err = a.tw.Write(data)
	}
}
