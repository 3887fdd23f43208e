package imagepullspec

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// dockerHub is the registry go-containerregistry names Docker Hub.
const dockerHub = "index.docker.io"

// SplitImage parses an image reference into the NodeImage image name and tag the node agent pulls, as
// upstream splits it: the name in its familiar form (Docker Hub's registry and library/ left out, so that
// nginx and docker.io/library/nginx share one entry), and the tag, latest when there is none, or the digest
// (sha256:...) of a reference by digest.
func SplitImage(ref string) (image, tag string, err error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", "", fmt.Errorf("invalid image reference %q: %w", ref, err)
	}
	repo := r.Context()
	image = repo.RegistryStr() + "/" + repo.RepositoryStr()
	if repo.RegistryStr() == dockerHub {
		image = repo.RepositoryStr()
		if rest, ok := strings.CutPrefix(image, "library/"); ok && !strings.Contains(rest, "/") {
			image = rest
		}
	}
	return image, r.Identifier(), nil
}
