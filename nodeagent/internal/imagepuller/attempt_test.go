package imagepuller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
)

// holdingImages is a runtime whose pulls hold until their caller gives up, and then answer as a CRI runtime
// does: with the gRPC status of the caller's context.
type holdingImages struct{}

func (holdingImages) PullImage(ctx context.Context, _ cri.PullRequest) (string, error) {
	<-ctx.Done()
	code := codes.Canceled
	if ctx.Err() == context.DeadlineExceeded {
		code = codes.DeadlineExceeded
	}
	return "", fmt.Errorf("CRI PullImage: %w", status.Error(code, ctx.Err().Error()))
}

func (holdingImages) ImageStatus(context.Context, string) (cri.Image, error) { return cri.Image{}, nil }

// An attempt that runs out its timeout says so, in the words the plan uses when it times one out itself,
// rather than in the runtime's "context deadline exceeded"; one cancelled (the tag left the spec) is not a
// timeout.
func TestAttemptTimesOut(t *testing.T) {
	r := &Reconciler{Images: holdingImages{}}
	const timeout = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	res := r.attempt(ctx, Start{Key: nginx, Attempt: 1, Timeout: timeout})
	if res.Reason != ReasonTimeout || res.Err == nil || res.Err.Error() != "pulling image nginx:1.25 timed out after 50ms" {
		t.Errorf("timed-out attempt: %+v", res)
	}

	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	res = r.attempt(ctx, Start{Key: nginx, Attempt: 1, Timeout: timeout})
	if res.Reason == ReasonTimeout || res.Err == nil || strings.Contains(res.Err.Error(), "timed out") {
		t.Errorf("cancelled attempt: %+v", res)
	}
}
