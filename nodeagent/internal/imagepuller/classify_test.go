package imagepuller

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fmt.Errorf("CRI PullImage x: %w", status.Error(codes.NotFound, "failed to resolve reference")), ReasonNotFound},
		{status.Error(codes.Unknown, `failed to resolve reference "x": docker.io/x: not found`), ReasonNotFound},
		{status.Error(codes.Unknown, "pull access denied: 401 Unauthorized"), ReasonAuth},
		{status.Error(codes.Unauthenticated, "no"), ReasonAuth},
		{fmt.Errorf("wrapped: %w", status.Error(codes.DeadlineExceeded, "context deadline exceeded")), ReasonTimeout},
		{fmt.Errorf("pulling: %w", context.DeadlineExceeded), ReasonTimeout},
		{errors.New("disk full"), ReasonPullFailed},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
