package cri_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/nodeagent/cri/critest"
)

func TestImageStatus(t *testing.T) {
	rt, c := dial(t)
	rt.AddImage("docker.io/library/nginx:1.25", "sha256:abc", 42)
	got, err := c.ImageStatus(t.Context(), "docker.io/library/nginx:1.25")
	if err != nil {
		t.Fatal(err)
	}
	want := cri.Image{Present: true, ID: "sha256:abc", Size: 42, RepoTags: []string{"docker.io/library/nginx:1.25"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("present image (-want +got):\n%s", diff)
	}
	if got, err := c.ImageStatus(t.Context(), "docker.io/library/nginx:1.26"); err != nil || got.Present {
		t.Errorf("absent image: %+v, %v", got, err)
	}
}

func TestPullImage(t *testing.T) {
	rt, c := dial(t)
	rt.SetRegistryImage("example.com/app:v1", critest.RegistryImage{ID: "sha256:app", Size: 7})
	req := cri.PullRequest{Image: "example.com/app:v1", SandboxLabels: map[string]string{"l": "1"},
		SandboxAnnotations: map[string]string{"a": "2"}}
	id, err := c.PullImage(t.Context(), req)
	if err != nil || id != "sha256:app" {
		t.Fatalf("PullImage = %q, %v", id, err)
	}
	if !rt.HasImage("example.com/app:v1") {
		t.Error("the pulled image is not on the node")
	}
	want := []critest.Pull{{Image: req.Image, SandboxLabels: req.SandboxLabels, SandboxAnnotations: req.SandboxAnnotations}}
	if diff := cmp.Diff(want, rt.Pulls()); diff != "" {
		t.Errorf("pulls (-want +got):\n%s", diff)
	}
}

func TestPullImageFailures(t *testing.T) {
	rt, c := dial(t)
	auth := &cri.Auth{Username: "u", Password: "p"}
	rt.SetRegistryImage("example.com/private:v1", critest.RegistryImage{Auth: auth})
	rt.SetRegistryImage("example.com/broken:v1", critest.RegistryImage{Err: errors.New("layer corrupt")})
	rt.SetRegistryImage("example.com/stuck:v1", critest.RegistryImage{Hang: true})
	for _, tc := range []struct {
		name string
		req  cri.PullRequest
		code codes.Code
		msg  string
	}{
		{"unknown image", cri.PullRequest{Image: "example.com/missing:v1"}, codes.NotFound, "not found"},
		{"anonymous pull of a private image", cri.PullRequest{Image: "example.com/private:v1"}, codes.Unknown, "401"},
		{"wrong password", cri.PullRequest{Image: "example.com/private:v1", Auth: &cri.Auth{Username: "u", Password: "x"}}, codes.Unknown, "401"},
		{"scripted error", cri.PullRequest{Image: "example.com/broken:v1"}, codes.Unknown, "layer corrupt"},
		{"stuck pull", cri.PullRequest{Image: "example.com/stuck:v1"}, codes.DeadlineExceeded, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer cancel()
			_, err := c.PullImage(ctx, tc.req)
			if status.Code(errors.Unwrap(err)) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("PullImage error = %v, want code %v containing %q", err, tc.code, tc.msg)
			}
		})
	}
	if _, err := c.PullImage(t.Context(), cri.PullRequest{Image: "example.com/private:v1", Auth: auth}); err != nil {
		t.Errorf("pull with the right credential: %v", err)
	}
}
