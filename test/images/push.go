package images

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push sends a built image to the registry of its reference, with the credentials the Docker config holds
// (what `docker login` writes); a registry on localhost is spoken to over plain HTTP.
func Push(ctx context.Context, r Result) error {
	if err := remote.Write(r.Ref, r.Image, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", r.Ref, err)
	}
	return nil
}
