package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// DefaultNodeAgentReadyTimeout bounds the wait for a node agent's /healthz when NodeAgentConfig says none.
const DefaultNodeAgentReadyTimeout = time.Minute

// NodeAgentConfig says how to run flotilla-nodeagent for one node.
type NodeAgentConfig struct {
	// Binary is the prebuilt flotilla-nodeagent.
	Binary string
	// NodeName is the node the agent plays (env NODE_NAME): it acts on that node's requests only.
	NodeName string
	// CRIEndpoint is the runtime's unix:// socket.
	CRIEndpoint string
	// KubeconfigPath is handed to the agent.
	KubeconfigPath string
	// WorkDir receives the agent's log.
	WorkDir string
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
	// ReadyTimeout bounds the wait for /healthz.
	ReadyTimeout time.Duration
}

// NodeAgent is a running flotilla-nodeagent process.
type NodeAgent struct {
	// LogPath receives the agent's stdout and stderr.
	LogPath string
	// Addr serves /metrics and /healthz.
	Addr string

	cmd      *exec.Cmd
	exited   chan struct{}
	exitErr  error
	stopOnce sync.Once
}

// StartNodeAgent starts the agent on a free loopback port and returns once its /healthz passes, which
// means it reached the runtime. On error nothing is left running.
func StartNodeAgent(ctx context.Context, cfg NodeAgentConfig) (*NodeAgent, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultNodeAgentReadyTimeout
	}
	a, err := launchNodeAgent(cfg)
	if err != nil {
		return nil, err
	}
	if err := a.waitHealthy(ctx, cfg.ReadyTimeout); err != nil {
		a.Stop()
		return nil, fmt.Errorf("%w\nlast lines of %s:\n%s", err, a.LogPath, a.LogTail(40))
	}
	return a, nil
}

func (c NodeAgentConfig) validate() error {
	var errs []error
	for name, v := range map[string]string{"Binary": c.Binary, "NodeName": c.NodeName, "CRIEndpoint": c.CRIEndpoint,
		"KubeconfigPath": c.KubeconfigPath, "WorkDir": c.WorkDir} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	return errors.Join(errs...)
}

// launchNodeAgent starts the process in its own process group, killed with the test process.
func launchNodeAgent(cfg NodeAgentConfig) (*NodeAgent, error) {
	ports, err := cluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	a := &NodeAgent{LogPath: filepath.Join(cfg.WorkDir, "flotilla-nodeagent-"+cfg.NodeName+".log"),
		Addr: loopback(ports[0]), exited: make(chan struct{})}
	log, err := os.Create(a.LogPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", a.LogPath, err)
	}
	defer log.Close() // the child holds its own descriptor
	args := append([]string{"--kubeconfig=" + cfg.KubeconfigPath, "--cri-endpoint=" + cfg.CRIEndpoint,
		"--addr=" + a.Addr}, cfg.ExtraArgs...)
	a.cmd = exec.Command(cfg.Binary, args...)
	a.cmd.Env = append(os.Environ(), "NODE_NAME="+cfg.NodeName)
	a.cmd.Stdout, a.cmd.Stderr = log, log
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startLocked(a.cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cfg.Binary, err)
	}
	go func() {
		a.exitErr = a.cmd.Wait()
		close(a.exited)
	}()
	return a, nil
}

// waitHealthy polls /healthz until it answers 200, the process exits, or the timeout passes.
func (a *NodeAgent) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	url := "http://" + a.Addr + "/healthz"
	for !readyz(ctx, url) {
		select {
		case <-a.exited:
			return fmt.Errorf("node agent exited before it was healthy: %w", a.exitErr)
		case <-ctx.Done():
			return fmt.Errorf("node agent not healthy at %s: %w", url, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// Exited is closed when the process has ended.
func (a *NodeAgent) Exited() <-chan struct{} { return a.exited }

// Stop ends the process group: SIGTERM, then SIGKILL after a grace period. It is safe to call more than once.
func (a *NodeAgent) Stop() {
	a.stopOnce.Do(func() {
		pgid := -a.cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		select {
		case <-a.exited:
		case <-time.After(stopGrace):
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-a.exited
		}
	})
}

// LogTail returns the last n lines of the agent's log.
func (a *NodeAgent) LogTail(n int) string {
	b, err := os.ReadFile(a.LogPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", a.LogPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
