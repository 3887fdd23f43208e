package cri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// KnownSockets are the runtime sockets probed under the host's /var/run, in upstream's order.
var KnownSockets = []string{
	"containerd.sock", "containerd/containerd.sock",
	"crio.sock", "crio/crio.sock",
	"cri-dockerd.sock", "cri-dockerd/cri-dockerd.sock",
}

// Connect dials endpoint when it is set; otherwise it probes KnownSockets under hostRunDir and returns the
// first runtime that answers Version.
func Connect(ctx context.Context, endpoint, hostRunDir string) (*Client, error) {
	if endpoint != "" {
		return Dial(ctx, endpoint)
	}
	var errs []error
	for _, name := range KnownSockets {
		path := filepath.Join(hostRunDir, name)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		c, err := Dial(ctx, path)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("no CRI socket found under %s (tried %v); set --cri-endpoint", hostRunDir, KnownSockets)
	}
	return nil, fmt.Errorf("no CRI socket under %s answers: %w", hostRunDir, errors.Join(errs...))
}
