package images_test

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/images"
)

func spec(created time.Time) images.Spec {
	return images.Spec{
		Files:      []images.File{{Path: "/usr/bin/app", Content: []byte("binary")}, {Path: "/etc/app.conf", Content: []byte("x=1"), Mode: 0o644}},
		Entrypoint: []string{"/usr/bin/app"}, User: "65532:65532", Env: []string{"A=1"},
		Labels: map[string]string{"org.opencontainers.image.version": "v9"}, Created: created, Arch: "amd64",
	}
}

func digest(t *testing.T, s images.Spec) v1.Hash {
	t.Helper()
	img, err := images.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSameInputsSameDigest(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if a, b := digest(t, spec(created)), digest(t, spec(created)); a != b {
		t.Errorf("two builds of one spec: %s and %s", a, b)
	}
	if a, b := digest(t, spec(created)), digest(t, spec(created.Add(time.Second))); a == b {
		t.Errorf("a different creation time kept digest %s", a)
	}
	changed := spec(created)
	changed.Files[0].Content = []byte("binary 2")
	if a, b := digest(t, spec(created)), digest(t, changed); a == b {
		t.Errorf("a different file kept digest %s", a)
	}
}

func TestConfigAndLayer(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	img, err := images.Build(spec(created))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || cfg.Config.User != "65532:65532" ||
		cfg.Config.Entrypoint[0] != "/usr/bin/app" || cfg.Config.Labels["org.opencontainers.image.version"] != "v9" ||
		!cfg.Created.Equal(created) {
		t.Errorf("config = %+v", cfg)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []string
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(created) {
			t.Errorf("%s: owner %d:%d, time %v", hdr.Name, hdr.Uid, hdr.Gid, hdr.ModTime)
		}
		got = append(got, hdr.Name+":"+os.FileMode(hdr.Mode).String())
	}
	want := "etc/:-rwxr-xr-x etc/app.conf:-rw-r--r-- usr/:-rwxr-xr-x usr/bin/:-rwxr-xr-x usr/bin/app:-rwxr-xr-x"
	if strings.Join(got, " ") != want {
		t.Errorf("layer entries:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// TestArchive reads the archive back as `ctr image import` does: the index names the image and points at a
// manifest blob, which points at the config and layer blobs; docker's manifest.json names the same.
func TestArchive(t *testing.T) {
	img, err := images.Build(spec(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	ref := name.MustParseReference("registry.example/team/app:v9").(name.Tag)
	path := filepath.Join(t.TempDir(), "app.tar")
	if err := images.WriteArchive(path, ref, img); err != nil {
		t.Fatal(err)
	}
	files := readTar(t, path)
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", files["oci-layout"])
	}
	var index v1.IndexManifest
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json = %s (%v)", files["index.json"], err)
	}
	m := index.Manifests[0]
	wantDigest, _ := img.Digest()
	if m.Digest != wantDigest || m.Annotations["io.containerd.image.name"] != ref.String() ||
		m.Annotations["org.opencontainers.image.ref.name"] != "v9" {
		t.Errorf("index entry = %+v, want digest %s named %s", m, wantDigest, ref)
	}
	var manifest v1.Manifest
	if err := json.Unmarshal(files["blobs/sha256/"+m.Digest.Hex], &manifest); err != nil {
		t.Fatalf("manifest blob: %v", err)
	}
	for _, d := range append([]v1.Descriptor{manifest.Config}, manifest.Layers...) {
		if got := int64(len(files["blobs/sha256/"+d.Digest.Hex])); got != d.Size {
			t.Errorf("blob %s: %d bytes in the archive, descriptor says %d", d.Digest, got, d.Size)
		}
	}
	// docker load and crane push read the archive as `docker save` writes it, through manifest.json.
	loaded, err := tarball.ImageFromPath(path, &ref)
	if err != nil {
		t.Fatalf("reading the archive as a docker tarball: %v", err)
	}
	wantConfig, _ := img.ConfigName()
	if got, err := loaded.ConfigName(); err != nil || got != wantConfig {
		t.Errorf("docker tarball config %s (%v), want %s", got, err, wantConfig)
	}
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = data
	}
}

// TestPauseImageIsReproducible compiles and packs the pause program twice: the binaries and so the digests
// must be equal.
func TestPauseImageIsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a program")
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	a, err := images.BuildPause(t.Context(), root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := images.BuildPause(t.Context(), root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest != b.Digest {
		t.Errorf("two builds of the pause image: %s and %s", a.Digest, b.Digest)
	}
}

// TestChartDefaultsNameTheseImages: installed with its defaults, the chart runs the images `make images`
// builds: the same repositories, and tags that default to the appVersion the images are stamped with.
func TestChartDefaultsNameTheseImages(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "charts", "flotilla", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type image struct{ Repository, Tag string }
	var values struct {
		Image     image
		NodeAgent struct{ Image image } `json:"nodeAgent"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	stamp, err := images.DefaultStamp(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		product images.Product
		values  image
	}{{images.Products[0], values.Image}, {images.Products[1], values.NodeAgent.Image}} {
		ref, err := stamp.Ref(tc.product)
		if err != nil {
			t.Fatal(err)
		}
		if tc.values.Repository != ref.Context().String() || tc.values.Tag != "" {
			t.Errorf("chart image %s:%q, want repository %s and the tag left to the appVersion %s",
				tc.values.Repository, tc.values.Tag, ref.Context(), stamp.Version)
		}
	}
}

// TestPush pushes an image to a registry (go-containerregistry's, in memory) and reads it back by tag.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	img, err := images.Build(spec(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(strings.TrimPrefix(srv.URL, "http://") + "/team/app:v9")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if err := images.Push(t.Context(), images.Result{Ref: ref, Digest: want, Image: img}); err != nil {
		t.Fatal(err)
	}
	got, err := remote.Head(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != want {
		t.Errorf("the registry holds %s under %s, want %s", got.Digest, ref, want)
	}
}
