package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Images is what the agent asks of the runtime's CRI ImageService: pull an image and look one up. The
// runtime serves it on the same socket as the RuntimeService.
type Images interface {
	// PullImage pulls req.Image and returns the image reference the runtime resolved it to (its ID).
	PullImage(ctx context.Context, req PullRequest) (string, error)
	// ImageStatus looks ref up among the node's images; an absent image is no error.
	ImageStatus(ctx context.Context, ref string) (Image, error)
}

// Auth is the credential a pull presents to the registry: a user name and password, or a base64
// "user:password" in Auth (a dockerconfigjson entry's form). Nil pulls anonymously.
type Auth struct {
	Username, Password, Auth string
}

// PullRequest is one PullImage call.
type PullRequest struct {
	// Image is the reference to pull, "name:tag" or "name@digest".
	Image string
	Auth  *Auth
	// SandboxLabels and SandboxAnnotations go into the sandbox config runtimes may read (for instance to
	// pick a snapshotter); no sandbox is created.
	SandboxLabels, SandboxAnnotations map[string]string
}

// Image is one image as ImageStatus reports it.
type Image struct {
	// Present is false when the node does not have the image; the other fields are then empty.
	Present     bool
	ID          string
	Size        uint64
	RepoTags    []string
	RepoDigests []string
}

var _ Images = (*Client)(nil)

// PullImage implements Images. A pull runs as long as ctx allows: the caller sets its timeout, since a
// large image takes far longer than the client's default call timeout.
func (c *Client) PullImage(ctx context.Context, req PullRequest) (string, error) {
	resp, err := c.img.PullImage(ctx, &runtimeapi.PullImageRequest{
		Image: &runtimeapi.ImageSpec{Image: req.Image},
		Auth:  toAuth(req.Auth),
		// A sandbox config is always sent: some runtimes fail on a nil one.
		SandboxConfig: &runtimeapi.PodSandboxConfig{Labels: req.SandboxLabels, Annotations: req.SandboxAnnotations},
	})
	if err != nil {
		return "", fmt.Errorf("CRI PullImage %s: %w", req.Image, err)
	}
	return resp.GetImageRef(), nil
}

// ImageStatus implements Images.
func (c *Client) ImageStatus(ctx context.Context, ref string) (Image, error) {
	ctx, cancel := c.call(ctx, 0)
	defer cancel()
	resp, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		return Image{}, fmt.Errorf("CRI ImageStatus %s: %w", ref, err)
	}
	img := resp.GetImage()
	if img == nil {
		return Image{}, nil
	}
	return Image{Present: true, ID: img.GetId(), Size: img.GetSize(), RepoTags: img.GetRepoTags(),
		RepoDigests: img.GetRepoDigests()}, nil
}

func toAuth(a *Auth) *runtimeapi.AuthConfig {
	if a == nil {
		return nil
	}
	return &runtimeapi.AuthConfig{Username: a.Username, Password: a.Password, Auth: a.Auth}
}
