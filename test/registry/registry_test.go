package registry

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

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

// stallingRegistry runs a registry behind basic authentication that stalls the GETs of one image's layer
// in repository team/slow, and holds that image in team/slow and team/fast; it returns the two blob paths.
func stallingRegistry(t *testing.T) (r *Registry, slow, fast string) {
	t.Helper()
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	layer, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	slow, fast = "/v2/team/slow/blobs/"+layer.String(), "/v2/team/fast/blobs/"+layer.String()
	r, err = Start(Options{Username: "puller", Password: "s3cret", Stall: func(req *http.Request) bool {
		return req.Method == http.MethodGet && req.URL.Path == slow
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	for _, repo := range []string{"team/slow:v1", "team/fast:v1"} {
		if _, err := r.Push(t.Context(), repo, img); err != nil {
			t.Fatalf("push %s: %v", repo, err)
		}
	}
	return r, slow, fast
}

// get GETs path from r, with the registry's credentials when auth.
func get(ctx context.Context, t *testing.T, r *Registry, path string, auth bool) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.SetBasicAuth("puller", "s3cret")
	}
	return http.DefaultClient.Do(req)
}

// waitEnded waits for the registry to have stalled n requests, the last of which ended.
func waitEnded(t *testing.T, r *Registry, n int) []StalledRequest {
	t.Helper()
	for range 250 {
		if got := r.Stalled(); len(got) == n && !got[n-1].End.IsZero() {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("stalled %+v, want %d ended", r.Stalled(), n)
	return nil
}

// What Stall does not pick is answered: the same blob in another repository, and the stalled one without
// credentials (authentication comes first).
func TestStallLeavesTheOthers(t *testing.T) {
	r, slow, fast := stallingRegistry(t)
	for path, auth := range map[string]bool{fast: true, slow: false} {
		resp, err := get(t.Context(), t, r, path, auth)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_ = resp.Body.Close()
		if want := map[bool]int{true: http.StatusOK, false: http.StatusUnauthorized}[auth]; resp.StatusCode != want {
			t.Errorf("GET %s: %s, want %d", path, resp.Status, want)
		}
	}
	if got := r.Stalled(); len(got) != 0 {
		t.Errorf("stalled %+v, want none", got)
	}
}

// A stalled request is never answered: it lasts until the client gives up, and the registry records when
// it came and ended.
func TestStallUntilTheClientGivesUp(t *testing.T) {
	r, slow, _ := stallingRegistry(t)
	const clientTimeout = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), clientTimeout)
	defer cancel()
	if resp, err := get(ctx, t, r, slow, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled GET: %v %v, want the client's timeout", resp, err)
	}
	got := waitEnded(t, r, 1)[0]
	if got.Method != http.MethodGet || got.Path != slow || got.End.Sub(got.Start) < clientTimeout/2 {
		t.Errorf("stalled %+v, want the GET of %s held about %v", got, slow, clientTimeout)
	}
}

// Close ends the stalled requests, unanswered, of clients that would wait for ever.
func TestStallUntilClose(t *testing.T) {
	r, slow, _ := stallingRegistry(t)
	answered := make(chan *http.Response, 1)
	go func() {
		resp, err := get(context.Background(), t, r, slow, true)
		if err == nil {
			_ = resp.Body.Close()
		}
		answered <- resp
	}()
	for len(r.Stalled()) < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-answered:
		if resp != nil {
			t.Errorf("the stalled request was answered %s when the registry closed", resp.Status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled request outlived the registry")
	}
	waitEnded(t, r, 1)
}
