// Package registry runs an OCI distribution registry inside a test process, on a loopback port over plain
// HTTP, optionally behind basic authentication, so that pulls by a real container runtime need nothing from
// the internet. Images are built by the tests themselves (package images) and pushed here. A registry can
// also stall chosen requests, as a registry that stops answering does, and report when they came and ended.
package registry

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Options configure a registry. With Username set, every request needs those credentials.
type Options struct {
	Username, Password string
	// Stall, when set, is asked about every request that passed authentication; one it returns true for
	// is never answered: it hangs until the client gives up or the registry closes. Stalled lists them.
	Stall func(*http.Request) bool
}

// StalledRequest is a request the registry stalled: when it came and when it ended (the client gave up or
// the registry closed); End is zero while it hangs.
type StalledRequest struct {
	Method, Path string
	Start, End   time.Time
}

// Registry is a running registry; Close stops it.
type Registry struct {
	// Host is host:port, the registry part of the references of its images.
	Host string
	opts Options
	srv  *http.Server

	mu      sync.Mutex
	stalled []StalledRequest
	// closed ends the stalled requests when the registry closes.
	closed    chan struct{}
	closeOnce sync.Once
}

// Start serves a registry on 127.0.0.1 at a free port.
func Start(opts Options) (*Registry, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("registry listener: %w", err)
	}
	r := &Registry{Host: ln.Addr().String(), opts: opts, closed: make(chan struct{})}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if opts.Stall != nil {
		h = r.stall(h)
	}
	if opts.Username != "" {
		h = basicAuth(h, opts)
	}
	r.srv = &http.Server{Handler: h}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the registry, ends the requests it stalled and drops what it holds.
func (r *Registry) Close() error {
	r.closeOnce.Do(func() { close(r.closed) })
	return r.srv.Close()
}

// Stalled lists the requests Options.Stall picked, in the order they came.
func (r *Registry) Stalled() []StalledRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.stalled)
}

// stall holds the requests Options.Stall picks, unanswered, until their client goes or the registry
// closes, and records when they came and ended.
func (r *Registry) stall(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !r.opts.Stall(req) {
			next.ServeHTTP(w, req)
			return
		}
		r.mu.Lock()
		i := len(r.stalled)
		r.stalled = append(r.stalled, StalledRequest{Method: req.Method, Path: req.URL.Path, Start: time.Now()})
		r.mu.Unlock()
		select {
		case <-req.Context().Done():
		case <-r.closed:
		}
		r.mu.Lock()
		r.stalled[i].End = time.Now()
		r.mu.Unlock()
		// Never an answer, not even the empty one a returning handler makes: the connection is dropped.
		panic(http.ErrAbortHandler)
	})
}

// Ref is the reference of repository:tag (or repository@digest) in this registry.
func (r *Registry) Ref(repoTag string) string { return r.Host + "/" + repoTag }

// Push stores img as repository:tag and returns its reference by digest.
func (r *Registry) Push(ctx context.Context, repoTag string, img v1.Image) (string, error) {
	ref, err := name.ParseReference(r.Ref(repoTag), name.Insecure)
	if err != nil {
		return "", err
	}
	auth := authn.Anonymous
	if r.opts.Username != "" {
		auth = authn.FromConfig(authn.AuthConfig{Username: r.opts.Username, Password: r.opts.Password})
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuth(auth)); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return ref.Context().Digest(digest.String()).String(), nil
}

// basicAuth answers 401 with a Basic challenge, as a registry behind basic authentication does, to any
// request without the right credentials; runtimes and go-containerregistry answer the challenge.
func basicAuth(next http.Handler, opts Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		user, pass, ok := req.BasicAuth()
		if !ok || !equal(user, opts.Username) || !equal(pass, opts.Password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="flotilla-test-registry"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, req)
	})
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
