package cluster

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/flotilla-dev/flotilla/test/images"
	"github.com/flotilla-dev/flotilla/test/registry"
)

// testRegistryPull pulls an image the test builds from a registry the test runs, behind basic
// authentication, into the node's containerd through CRI: the harness the node agent's image pulls are
// tested on. Without credentials, or with wrong ones, the runtime refuses.
func testRegistryPull(t *testing.T, n *RealNode) {
	reg, err := registry.Start(registry.Options{Username: "puller", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Close() }()
	img, err := images.Build(images.Spec{Files: []images.File{{Path: "/hello", Content: []byte("hello\n"), Mode: 0o644}}})
	if err != nil {
		t.Fatal(err)
	}
	byDigest, err := reg.Push(t.Context(), "hello:v1", img)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.AllowPlainHTTP(reg.Host); err != nil {
		t.Fatal(err)
	}
	images := imageService(t, n)
	ref := reg.Ref("hello:v1")
	for _, auth := range []*runtimeapi.AuthConfig{nil, {Username: "puller", Password: "wrong"}} {
		if _, err := images.PullImage(t.Context(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}, Auth: auth}); err == nil ||
			!strings.Contains(err.Error(), "401 Unauthorized") {
			t.Errorf("pull with %v: %v, want 401 Unauthorized", auth, err)
		}
	}
	pulled, err := images.PullImage(t.Context(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref},
		Auth: &runtimeapi.AuthConfig{Username: "puller", Password: "s3cret"}})
	if err != nil {
		t.Fatalf("pull with the credentials: %v", err)
	}
	status, err := images.ImageStatus(t.Context(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil || status.Image == nil {
		t.Fatalf("image status: %v %v", status, err)
	}
	if status.Image.Id != pulled.ImageRef || !slices.Contains(status.Image.RepoDigests, byDigest) || !slices.Contains(status.Image.RepoTags, ref) {
		t.Errorf("pulled %s; the runtime holds %+v, pushed %s", pulled.ImageRef, status.Image, byDigest)
	}
}

func imageService(t *testing.T, n *RealNode) runtimeapi.ImageServiceClient {
	conn, err := grpc.NewClient(n.CRIEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return runtimeapi.NewImageServiceClient(conn)
}
