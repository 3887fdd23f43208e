package registry

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func TestPushAndPullBehindBasicAuth(t *testing.T) {
	r, err := Start(Options{Username: "puller", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	byDigest, err := r.Push(t.Context(), "app:v1", img)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	want, _ := img.Digest()
	if !strings.HasSuffix(byDigest, "@"+want.String()) || !strings.HasPrefix(byDigest, r.Host+"/app@") {
		t.Errorf("pushed as %s, digest %s", byDigest, want)
	}
	ref, err := name.ParseReference(r.Ref("app:v1"), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	good := authn.FromConfig(authn.AuthConfig{Username: "puller", Password: "s3cret"})
	got, err := remote.Image(ref, remote.WithAuth(good))
	if err != nil {
		t.Fatalf("pull with the credentials: %v", err)
	}
	if d, _ := got.Digest(); d != want {
		t.Errorf("pulled %s, pushed %s", d, want)
	}
	for _, auth := range []authn.Authenticator{authn.Anonymous, authn.FromConfig(authn.AuthConfig{Username: "puller", Password: "wrong"})} {
		if _, err := remote.Image(ref, remote.WithAuth(auth)); err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
			t.Errorf("pull without the right credentials: %v", err)
		}
	}
}
