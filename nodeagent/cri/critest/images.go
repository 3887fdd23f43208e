package critest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
)

// RegistryImage scripts what a pull of one reference does. A reference the registry does not know fails
// NotFound, as a runtime reports an unknown image.
type RegistryImage struct {
	// ID is the image ID the pull stores (the reference itself when empty); Size its size.
	ID   string
	Size uint64
	// Auth, when set, is the credential the registry wants: a pull presenting anything else (or nothing)
	// fails as unauthorized.
	Auth *cri.Auth
	// Err fails every pull of the reference with this message (code Unknown).
	Err error
	// Delay holds each pull this long before it answers; Hang holds it until the caller gives up, so that
	// timeouts can be tested.
	Delay time.Duration
	Hang  bool
}

// Pull is one PullImage call the runtime received.
type Pull struct {
	Image                             string
	Auth                              *cri.Auth
	SandboxLabels, SandboxAnnotations map[string]string
}

// AddImage puts an image on the node, as if pulled before.
func (r *Runtime) AddImage(ref, id string, size uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images[ref] = cri.Image{Present: true, ID: id, Size: size, RepoTags: []string{ref}}
}

// SetRegistryImage makes ref pullable as img says.
func (r *Runtime) SetRegistryImage(ref string, img RegistryImage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registry[ref] = img
}

// Pulls returns the PullImage calls received so far, successful or not, in order.
func (r *Runtime) Pulls() []Pull {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pulls)
}

// HasImage reports whether ref is on the node.
func (r *Runtime) HasImage(ref string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.images[ref]
	return ok
}

// imageServer serves the CRI ImageService of a Runtime; a type of its own because both services' generated
// bases cannot be embedded in one struct.
type imageServer struct {
	runtimeapi.UnimplementedImageServiceServer
	r *Runtime
}

// ImageStatus implements the CRI call: no image and no error for an image the node does not have.
func (s *imageServer) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	img, ok := s.r.images[req.GetImage().GetImage()]
	if !ok {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: img.ID, Size: img.Size, RepoTags: img.RepoTags}}, nil
}

// PullImage implements the CRI call from the scripted registry.
func (s *imageServer) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	img, known := s.r.record(ref, req)
	if err := wait(ctx, img); err != nil {
		return nil, err
	}
	switch {
	case !known:
		return nil, status.Errorf(codes.NotFound, "failed to resolve reference %q: %s: not found", ref, ref)
	case img.Auth != nil && !sameAuth(img.Auth, req.GetAuth()):
		return nil, status.Errorf(codes.Unknown, "failed to resolve reference %q: pull access denied: 401 Unauthorized", ref)
	case img.Err != nil:
		return nil, status.Error(codes.Unknown, img.Err.Error())
	}
	id := img.ID
	if id == "" {
		id = ref
	}
	s.r.AddImage(ref, id, img.Size)
	return &runtimeapi.PullImageResponse{ImageRef: id}, nil
}

func (r *Runtime) record(ref string, req *runtimeapi.PullImageRequest) (RegistryImage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := Pull{Image: ref, SandboxLabels: maps.Clone(req.GetSandboxConfig().GetLabels()),
		SandboxAnnotations: maps.Clone(req.GetSandboxConfig().GetAnnotations())}
	if a := req.GetAuth(); a != nil {
		p.Auth = &cri.Auth{Username: a.GetUsername(), Password: a.GetPassword(), Auth: a.GetAuth()}
	}
	r.pulls = append(r.pulls, p)
	img, ok := r.registry[ref]
	return img, ok
}

// wait plays a slow or stuck registry; the caller's deadline ends it as it ends a real pull.
func wait(ctx context.Context, img RegistryImage) error {
	if !img.Hang && img.Delay <= 0 {
		return nil
	}
	var timer <-chan time.Time
	if !img.Hang {
		timer = time.After(img.Delay)
	}
	select {
	case <-timer:
		return nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return status.Error(codes.DeadlineExceeded, ctx.Err().Error())
		}
		return status.Error(codes.Canceled, ctx.Err().Error())
	}
}

func sameAuth(want *cri.Auth, got *runtimeapi.AuthConfig) bool {
	return got != nil && want.Username == got.GetUsername() && want.Password == got.GetPassword() && want.Auth == got.GetAuth()
}
