package imagepuller

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Reasons a pull failed, as events and logs name them.
const (
	ReasonNotFound   = "ImageNotFound"
	ReasonAuth       = "AuthFailed"
	ReasonTimeout    = "Timeout"
	ReasonDeadline   = "DeadlineExceeded"
	ReasonPullFailed = "PullFailed"
)

// Classify names why a pull failed. Runtimes wrap registry errors in code Unknown with the registry's
// words, so the message is read as well as the code.
func Classify(err error) string {
	if err == nil {
		return ""
	}
	msg := strings.ToLower(err.Error())
	st, _ := status.FromError(unwrapStatus(err))
	switch {
	case errors.Is(err, context.DeadlineExceeded) || st.Code() == codes.DeadlineExceeded:
		return ReasonTimeout
	case st.Code() == codes.Unauthenticated || st.Code() == codes.PermissionDenied || containsAny(msg,
		"unauthorized", "401", "403", "authentication required", "access denied", "authorization failed"):
		return ReasonAuth
	case st.Code() == codes.NotFound || containsAny(msg, "not found", "manifest unknown", "name unknown"):
		return ReasonNotFound
	}
	return ReasonPullFailed
}

// unwrapStatus finds the gRPC status error inside err's wrapping.
func unwrapStatus(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := status.FromError(e); ok {
			return e
		}
	}
	return err
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
