// Package critest is an in-process container runtime for tests: a CRI RuntimeService and ImageService gRPC
// server on a unix socket that keeps containers in memory with the kubelet's labels, and images pulled
// from a scripted registry. Tests play the kubelet through it (run a
// pod's containers, restart a stopped one) and read back what the node agent asked of the runtime (stops
// with their grace periods, execs). Only the calls the agent makes are served; the rest answer Unimplemented.
package critest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
)

// Pod names the pod a container belongs to, as the kubelet labels it.
type Pod struct {
	Namespace, Name, UID string
}

// Stop is one StopContainer call the runtime received.
type Stop struct {
	ContainerID  string
	GraceSeconds int64
}

// Exec is one ExecSync call the runtime received.
type Exec struct {
	ContainerID string
	Cmd         []string
}

// ExecFunc answers an ExecSync: what the command printed and its exit code, or an error for the call.
type ExecFunc func(containerID string, cmd []string) (cri.ExecResult, error)

// Runtime is the in-memory runtime; its exported methods are safe for concurrent use.
type Runtime struct {
	runtimeapi.UnimplementedRuntimeServiceServer

	// Endpoint is the unix:// address to dial.
	Endpoint string

	mu         sync.Mutex
	containers map[string]*container
	nextID     int
	stops      []Stop
	execs      []Exec
	stopErr    map[string]error
	exec       ExecFunc
	images     map[string]cri.Image
	registry   map[string]RegistryImage
	pulls      []Pull
}

type container struct {
	pod       Pod
	id, name  string
	restarts  int32
	state     runtimeapi.ContainerState
	createdAt time.Time
	startedAt time.Time
	endedAt   time.Time
}

// TB is the part of testing.TB that Start uses, so that test frameworks whose test handle is not a
// testing.TB (ginkgo's GinkgoT()) can start a runtime too.
type TB interface {
	Helper()
	TempDir() string
	Cleanup(func())
	Fatalf(format string, args ...any)
}

var _ TB = testing.TB(nil)

// Start serves a fresh runtime on a socket in a temporary directory until the test ends.
func Start(t TB) *Runtime {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("critest: listen on %s: %v", sock, err)
	}
	r := &Runtime{Endpoint: "unix://" + sock, containers: map[string]*container{}, stopErr: map[string]error{},
		images: map[string]cri.Image{}, registry: map[string]RegistryImage{}}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, r)
	runtimeapi.RegisterImageServiceServer(srv, &imageServer{r: r})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return r
}

// Dial returns a CRI client of the runtime, closed when the test ends: what the agent under test talks to.
func (r *Runtime) Dial(t TB) *cri.Client {
	t.Helper()
	c, err := cri.Dial(context.Background(), r.Endpoint)
	if err != nil {
		t.Fatalf("critest: dial %s: %v", r.Endpoint, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Run starts a first container (restart count 0) named name for pod and returns its id.
func (r *Runtime) Run(pod Pod, name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.add(pod, name, 0)
}

// Restart plays the kubelet restarting a container: it starts a new container for the same pod and name
// with the restart count of the newest one plus one, and returns the new id. The old container is left
// exited, as a runtime keeps it until the kubelet garbage-collects it.
func (r *Runtime) Restart(podUID, name string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.newest(podUID, name)
	if cur == nil {
		return "", fmt.Errorf("critest: no container %s in pod %s", name, podUID)
	}
	if cur.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.exit(cur)
	}
	return r.add(cur.pod, name, cur.restarts+1), nil
}

// FailStop makes every StopContainer of container id fail with err (nil: succeed again).
func (r *Runtime) FailStop(id string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopErr[id] = err
}

// OnExec sets the ExecSync handler; without one every command succeeds and prints nothing.
func (r *Runtime) OnExec(f ExecFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exec = f
}

// Stops returns the StopContainer calls received so far, successful or not, in order.
func (r *Runtime) Stops() []Stop {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.stops)
}

// Execs returns the ExecSync calls received so far, in order.
func (r *Runtime) Execs() []Exec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.execs)
}

// Running reports whether container id exists and runs.
func (r *Runtime) Running(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.containers[id]
	return c != nil && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING
}

func (r *Runtime) add(pod Pod, name string, restarts int32) string {
	r.nextID++
	// Containers created in one test are ordered by creation even within one clock tick.
	now := time.Now().Add(time.Duration(r.nextID) * time.Microsecond)
	c := &container{pod: pod, id: fmt.Sprintf("%064x", r.nextID), name: name, restarts: restarts,
		state: runtimeapi.ContainerState_CONTAINER_RUNNING, createdAt: now, startedAt: now}
	r.containers[c.id] = c
	return c.id
}

func (r *Runtime) newest(podUID, name string) *container {
	var out *container
	for _, c := range r.containers {
		if c.pod.UID == podUID && c.name == name && (out == nil || c.createdAt.After(out.createdAt)) {
			out = c
		}
	}
	return out
}

func (r *Runtime) exit(c *container) {
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.endedAt = time.Now()
}

func (c *container) labels() map[string]string {
	return map[string]string{
		cri.LabelPodUID: c.pod.UID, cri.LabelPodName: c.pod.Name, cri.LabelPodNamespace: c.pod.Namespace,
		cri.LabelContainerName: c.name,
	}
}

func (c *container) annotations() map[string]string {
	return map[string]string{cri.AnnotationRestartCount: strconv.Itoa(int(c.restarts))}
}

func (c *container) metadata() *runtimeapi.ContainerMetadata {
	return &runtimeapi.ContainerMetadata{Name: c.name, Attempt: uint32(max(c.restarts, 0))}
}

// Version implements the CRI call.
func (r *Runtime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "critest", RuntimeVersion: "v0.0.0",
		RuntimeApiVersion: "v1"}, nil
}

// ListContainers implements the CRI call with the id, state and label filters.
func (r *Runtime) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	resp := &runtimeapi.ListContainersResponse{}
	for _, c := range r.containers {
		if matches(c, req.GetFilter()) {
			resp.Containers = append(resp.Containers, &runtimeapi.Container{
				Id: c.id, PodSandboxId: "sandbox-" + c.pod.UID, Metadata: c.metadata(), State: c.state,
				CreatedAt: c.createdAt.UnixNano(), Labels: c.labels(), Annotations: c.annotations(),
			})
		}
	}
	return resp, nil
}

func matches(c *container, f *runtimeapi.ContainerFilter) bool {
	if f == nil {
		return true
	}
	if (f.GetId() != "" && f.GetId() != c.id) || (f.GetState() != nil && f.GetState().GetState() != c.state) {
		return false
	}
	labels := c.labels()
	for k, v := range f.GetLabelSelector() {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// ContainerStatus implements the CRI call.
func (r *Runtime) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.containers[req.GetContainerId()]
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.GetContainerId())
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id: c.id, Metadata: c.metadata(), State: c.state, CreatedAt: c.createdAt.UnixNano(),
		StartedAt: c.startedAt.UnixNano(), FinishedAt: nanos(c.endedAt), Labels: c.labels(), Annotations: c.annotations(),
	}}, nil
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// StopContainer implements the CRI call: it records the grace period and leaves the container exited,
// unless FailStop scripted an error for it.
func (r *Runtime) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stops = append(r.stops, Stop{ContainerID: req.GetContainerId(), GraceSeconds: req.GetTimeout()})
	c := r.containers[req.GetContainerId()]
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.GetContainerId())
	}
	if err := r.stopErr[c.id]; err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.exit(c)
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// ExecSync implements the CRI call through the OnExec handler.
func (r *Runtime) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	r.mu.Lock()
	r.execs = append(r.execs, Exec{ContainerID: req.GetContainerId(), Cmd: slices.Clone(req.GetCmd())})
	c, handler := r.containers[req.GetContainerId()], r.exec
	r.mu.Unlock()
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.GetContainerId())
	}
	if handler == nil {
		return &runtimeapi.ExecSyncResponse{}, nil
	}
	res, err := handler(req.GetContainerId(), req.GetCmd())
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &runtimeapi.ExecSyncResponse{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode}, nil
}
