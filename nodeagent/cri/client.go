package cri

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// maxMsgSize bounds gRPC messages both ways, as the kubelet does: a node's container list can be large.
	maxMsgSize = 16 << 20
	// DefaultTimeout bounds each call; a stop or an exec gets its own grace or timeout on top.
	DefaultTimeout = 10 * time.Second
)

// Client is a Runtime and Images over a gRPC connection to a CRI RuntimeService and ImageService.
type Client struct {
	conn    *grpc.ClientConn
	rt      runtimeapi.RuntimeServiceClient
	img     runtimeapi.ImageServiceClient
	timeout time.Duration
	// Endpoint is the unix:// address the client talks to.
	Endpoint string
}

var _ Runtime = (*Client)(nil)

// Dial connects to the runtime at endpoint (unix:///path or a bare absolute path) and checks that it answers
// Version; the connection is closed again when it does not.
func Dial(ctx context.Context, endpoint string) (*Client, error) {
	target, err := unixTarget(endpoint)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("connecting to CRI endpoint %s: %w", target, err)
	}
	c := &Client{conn: conn, rt: runtimeapi.NewRuntimeServiceClient(conn), img: runtimeapi.NewImageServiceClient(conn),
		timeout: DefaultTimeout, Endpoint: target}
	if _, err := c.Version(ctx); err != nil {
		return nil, errors.Join(err, conn.Close())
	}
	return c, nil
}

// unixTarget turns an endpoint into a gRPC unix target; only unix sockets are accepted, so the agent never
// reaches a runtime over the network.
func unixTarget(endpoint string) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		if !strings.HasPrefix(strings.TrimPrefix(endpoint, "unix://"), "/") {
			return "", fmt.Errorf("CRI endpoint %q: the socket path must be absolute", endpoint)
		}
		return endpoint, nil
	case strings.HasPrefix(endpoint, "/"):
		return "unix://" + endpoint, nil
	}
	return "", fmt.Errorf("CRI endpoint %q: want unix:///<socket path>", endpoint)
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

func (c *Client) call(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout+extra)
}

// Version implements Runtime.
func (c *Client) Version(ctx context.Context) (Version, error) {
	ctx, cancel := c.call(ctx, 0)
	defer cancel()
	resp, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return Version{}, fmt.Errorf("CRI Version at %s: %w", c.Endpoint, err)
	}
	return Version{RuntimeName: resp.GetRuntimeName(), RuntimeVersion: resp.GetRuntimeVersion(),
		RuntimeAPIVersion: resp.GetRuntimeApiVersion()}, nil
}

// ListContainers implements Runtime.
func (c *Client) ListContainers(ctx context.Context, labels map[string]string) ([]Container, error) {
	ctx, cancel := c.call(ctx, 0)
	defer cancel()
	resp, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: labels}})
	if err != nil {
		return nil, fmt.Errorf("CRI ListContainers: %w", err)
	}
	out := make([]Container, 0, len(resp.GetContainers()))
	for _, ct := range resp.GetContainers() {
		out = append(out, fromContainer(ct))
	}
	return out, nil
}

// ContainerStatus implements Runtime.
func (c *Client) ContainerStatus(ctx context.Context, id string) (ContainerStatus, error) {
	ctx, cancel := c.call(ctx, 0)
	defer cancel()
	resp, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return ContainerStatus{}, fmt.Errorf("CRI ContainerStatus %s: %w", id, err)
	}
	if resp.GetStatus() == nil {
		return ContainerStatus{}, fmt.Errorf("CRI ContainerStatus %s: empty answer", id)
	}
	return fromStatus(resp.GetStatus()), nil
}

// StopContainer implements Runtime. The call may take the whole grace period: its deadline includes it.
func (c *Client) StopContainer(ctx context.Context, id string, graceSeconds int64) error {
	ctx, cancel := c.call(ctx, time.Duration(max(graceSeconds, 0))*time.Second)
	defer cancel()
	if _, err := c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: graceSeconds}); err != nil {
		return fmt.Errorf("CRI StopContainer %s: %w", id, err)
	}
	return nil
}

// ExecSync implements Runtime.
func (c *Client) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (ExecResult, error) {
	ctx, cancel := c.call(ctx, timeout)
	defer cancel()
	// CRI counts whole seconds and reads 0 as "no timeout": round up.
	secs := int64((timeout + time.Second - 1) / time.Second)
	resp, err := c.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: secs})
	if err != nil {
		return ExecResult{}, fmt.Errorf("CRI ExecSync in %s: %w", id, err)
	}
	return ExecResult{Stdout: resp.GetStdout(), Stderr: resp.GetStderr(), ExitCode: resp.GetExitCode()}, nil
}

func fromContainer(ct *runtimeapi.Container) Container {
	return Container{
		ID: ct.GetId(), Name: ct.GetMetadata().GetName(), Attempt: ct.GetMetadata().GetAttempt(),
		State: fromState(ct.GetState()), CreatedAt: fromNanos(ct.GetCreatedAt()),
		Labels: ct.GetLabels(), Annotations: ct.GetAnnotations(),
	}
}

func fromStatus(s *runtimeapi.ContainerStatus) ContainerStatus {
	return ContainerStatus{
		Container: Container{
			ID: s.GetId(), Name: s.GetMetadata().GetName(), Attempt: s.GetMetadata().GetAttempt(),
			State: fromState(s.GetState()), CreatedAt: fromNanos(s.GetCreatedAt()),
			Labels: s.GetLabels(), Annotations: s.GetAnnotations(),
		},
		StartedAt: fromNanos(s.GetStartedAt()), FinishedAt: fromNanos(s.GetFinishedAt()),
		ExitCode: s.GetExitCode(), Reason: s.GetReason(), Message: s.GetMessage(),
	}
}

func fromState(s runtimeapi.ContainerState) State {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return StateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return StateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return StateExited
	}
	return StateUnknown
}

// fromNanos reads CRI's nanosecond timestamps; 0 means unset.
func fromNanos(ns int64) time.Time {
	if ns <= 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
