package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"
)

// DefaultRegistry is where the chart's default image repositories live (charts/flotilla/values.yaml).
const DefaultRegistry = "ghcr.io/flotilla-dev"

// sourceURL is the images' org.opencontainers.image.source label.
const sourceURL = "https://github.com/flotilla-dev/flotilla"

// Product is one of the images Flotilla ships.
type Product struct {
	// Name is the repository's last path element and the binary's name.
	Name string
	// Package is the command package, relative to the module root.
	Package string
	// User runs the binary; empty is root.
	User        string
	Description string
}

// Products are the images `make images` builds. The manager runs as the chart's non-root user; the node
// agent is root because the runtime's socket is root's (the chart drops every capability).
var Products = []Product{
	{Name: "flotilla-manager", Package: "./rollout/cmd/manager", User: "65532:65532",
		Description: "Flotilla's controllers and admission and conversion webhooks"},
	{Name: "flotilla-nodeagent", Package: "./nodeagent/cmd/nodeagent",
		Description: "Flotilla's node agent: restarts containers through the node's CRI socket"},
}

// Stamp is what every image carries besides its binary.
type Stamp struct {
	// Registry prefixes the repositories, e.g. ghcr.io/flotilla-dev.
	Registry string
	// Version is the tag and the version label.
	Version string
	// Revision is the commit label.
	Revision string
	// Created dates the image and its files.
	Created time.Time
	// Arch is the target architecture; empty is this machine's.
	Arch string
}

// Ref is the reference a product's image is named by under this stamp.
func (s Stamp) Ref(p Product) (name.Tag, error) {
	return name.NewTag(s.Registry + "/" + p.Name + ":" + s.Version)
}

// Result is one built image.
type Result struct {
	Ref     name.Tag
	Digest  v1.Hash
	Archive string
	Image   v1.Image
}

// DefaultStamp reads the module at root: the chart's appVersion (so the chart's default tags name these
// images), the HEAD commit and its time (SOURCE_DATE_EPOCH, when set, wins, as reproducible builds expect).
func DefaultStamp(ctx context.Context, root string) (Stamp, error) {
	version, err := ChartAppVersion(root)
	if err != nil {
		return Stamp{}, err
	}
	s := Stamp{Registry: DefaultRegistry, Version: version, Revision: "unknown", Created: time.Unix(0, 0).UTC()}
	if out, err := git(ctx, root, "rev-parse", "HEAD"); err == nil {
		s.Revision = out
	}
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		epoch, _ = git(ctx, root, "log", "-1", "--format=%ct")
	}
	if secs, err := strconv.ParseInt(epoch, 10, 64); err == nil {
		s.Created = time.Unix(secs, 0).UTC()
	}
	return s, nil
}

// ChartAppVersion is the appVersion of charts/flotilla, the chart's default image tag.
func ChartAppVersion(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "charts", "flotilla", "Chart.yaml"))
	if err != nil {
		return "", fmt.Errorf("reading the chart: %w", err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		return "", fmt.Errorf("reading the chart: %w", err)
	}
	if chart.AppVersion == "" {
		return "", errors.New("charts/flotilla/Chart.yaml has no appVersion")
	}
	return chart.AppVersion, nil
}

func git(ctx context.Context, root string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// BuildProduct compiles p from the module at root and writes its archive to outDir/<name>.tar.
func BuildProduct(ctx context.Context, root, outDir string, p Product, s Stamp) (Result, error) {
	ref, err := s.Ref(p)
	if err != nil {
		return Result{}, err
	}
	binDir, err := os.MkdirTemp("", "flotilla-images-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(binDir)
	bin := filepath.Join(binDir, p.Name)
	if err := GoBuild(ctx, root, p.Package, bin, s.Arch); err != nil {
		return Result{}, err
	}
	img, err := Build(Spec{
		Files: []File{{Path: "/" + p.Name, Source: bin}}, Entrypoint: []string{"/" + p.Name}, User: p.User,
		Labels: s.labels(p), Created: s.Created, Arch: s.Arch,
	})
	if err != nil {
		return Result{}, err
	}
	return writeResult(ref, img, filepath.Join(outDir, p.Name+".tar"))
}

func (s Stamp) labels(p Product) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       p.Name,
		"org.opencontainers.image.description": p.Description,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.revision":    s.Revision,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.source":      sourceURL,
	}
}

func writeResult(ref name.Tag, img v1.Image, archive string) (Result, error) {
	digest, err := img.Digest()
	if err != nil {
		return Result{}, err
	}
	if err := WriteArchive(archive, ref, img); err != nil {
		return Result{}, err
	}
	return Result{Ref: ref, Digest: digest, Archive: archive, Image: img}, nil
}

// BuildProducts builds every product into outDir.
func BuildProducts(ctx context.Context, root, outDir string, s Stamp) ([]Result, error) {
	results := make([]Result, 0, len(Products))
	for _, p := range Products {
		r, err := BuildProduct(ctx, root, outDir, p, s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		results = append(results, r)
	}
	return results, nil
}
