// Package cri is the node agent's narrow view of the container runtime: the few CRI RuntimeService calls
// the agent makes (Version, ListContainers, ContainerStatus, StopContainer, ExecSync) and ImageService
// calls (PullImage, ImageStatus), as plain Go values, over a gRPC connection to the runtime's unix
// socket. Keeping the surface small keeps the agent testable against an in-process runtime (package
// critest) and its privileges obvious.
package cri

import (
	"context"
	"strconv"
	"time"
)

// Labels and annotations the kubelet puts on every container it creates; the agent finds a pod's
// containers through them.
const (
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelContainerName = "io.kubernetes.container.name"
	// AnnotationRestartCount holds the container's restart count (the kubelet's source of truth for it).
	AnnotationRestartCount = "io.kubernetes.container.restartCount"
)

// Runtime is what the agent asks of the container runtime.
type Runtime interface {
	// Version names the runtime; it doubles as the liveness check.
	Version(ctx context.Context) (Version, error)
	// ListContainers lists the containers carrying all of labels (all containers for none).
	ListContainers(ctx context.Context, labels map[string]string) ([]Container, error)
	// ContainerStatus reads one container's state and timestamps.
	ContainerStatus(ctx context.Context, id string) (ContainerStatus, error)
	// StopContainer stops a container, killing it after graceSeconds (0: at once).
	StopContainer(ctx context.Context, id string, graceSeconds int64) error
	// ExecSync runs cmd in a container and waits at most timeout for it.
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (ExecResult, error)
}

// Version is the runtime's answer to Version.
type Version struct {
	RuntimeName, RuntimeVersion, RuntimeAPIVersion string
}

// State is a container's state as the runtime reports it.
type State string

// Container states (CRI's CONTAINER_*).
const (
	StateCreated State = "Created"
	StateRunning State = "Running"
	StateExited  State = "Exited"
	StateUnknown State = "Unknown"
)

// Container is one container as ListContainers reports it.
type Container struct {
	ID          string
	Name        string
	Attempt     uint32
	State       State
	CreatedAt   time.Time
	Labels      map[string]string
	Annotations map[string]string
}

// RestartCount is the kubelet's restart count of the container: its annotation, else the attempt.
func (c Container) RestartCount() int32 {
	if n, err := strconv.ParseInt(c.Annotations[AnnotationRestartCount], 10, 32); err == nil {
		return int32(n)
	}
	return int32(min(c.Attempt, 1<<31-1))
}

// ContainerStatus is one container as ContainerStatus reports it.
type ContainerStatus struct {
	Container
	StartedAt, FinishedAt time.Time
	ExitCode              int32
	Reason, Message       string
}

// ExecResult is what a command run by ExecSync produced.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
}
