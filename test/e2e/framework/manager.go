// Package framework holds what every e2e suite needs besides the cluster
// itself: the manager process, seed examples and object comparison.
package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// Defaults for ManagerConfig fields left zero.
const (
	DefaultWebhookNamespace = "flotilla-system"
	DefaultReadyTimeout     = 3 * time.Minute
	managerPackage          = "./rollout/cmd/manager"
	stopGrace               = 10 * time.Second
)

// ManagerConfig says how to build and run flotilla-manager.
type ManagerConfig struct {
	// RestConfig reaches the cluster; the webhook namespace is created with it.
	RestConfig *rest.Config
	// KubeconfigPath is handed to the manager.
	KubeconfigPath string
	// WorkDir receives the binary, the webhook certificates and the log.
	WorkDir string
	// Binary is a prebuilt manager; when empty the manager is built from the
	// module root into WorkDir.
	Binary string
	// WebhookNamespace holds the manager's certificate Secret.
	WebhookNamespace string
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
	// WithoutWebhooks names the webhooks of the configurations to leave out: those of modules the manager
	// does not run (--enable-modules), whose paths it would not serve.
	WithoutWebhooks []string
	// ReadyTimeout bounds the wait for /readyz.
	ReadyTimeout time.Duration
}

// Manager is a running flotilla-manager process.
type Manager struct {
	// LogPath receives the manager's stdout and stderr.
	LogPath string
	// CertDir holds the serving certificate the manager writes.
	CertDir string
	// Binary is the executable this process runs; StartManager can run it again.
	Binary      string
	MetricsAddr string
	ProbeAddr   string
	WebhookPort int

	cmd      *exec.Cmd
	exited   chan struct{}
	exitErr  error
	stopOnce sync.Once
}

// StartManager builds (unless cfg.Binary is set) and starts the manager, and
// returns once its readiness probe passes: certificates written and CRD
// conversion pointed at it. On error nothing is left running.
func StartManager(ctx context.Context, cfg ManagerConfig) (*Manager, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := ensureNamespace(ctx, cfg.RestConfig, cfg.WebhookNamespace); err != nil {
		return nil, err
	}
	if err := InstallWebhookConfigurations(ctx, cfg.RestConfig, cfg.WithoutWebhooks...); err != nil {
		return nil, fmt.Errorf("installing webhook configurations: %w", err)
	}
	bin, err := managerBinary(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m, err := launch(bin, cfg)
	if err != nil {
		return nil, err
	}
	m.Binary = bin
	if err := m.waitReady(ctx, cfg.ReadyTimeout); err != nil {
		m.Stop()
		return nil, fmt.Errorf("%w\nlast lines of %s:\n%s", err, m.LogPath, m.LogTail(40))
	}
	return m, nil
}

func (c ManagerConfig) withDefaults() ManagerConfig {
	if c.WebhookNamespace == "" {
		c.WebhookNamespace = DefaultWebhookNamespace
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	return c
}

func (c ManagerConfig) validate() error {
	var errs []error
	if c.RestConfig == nil {
		errs = append(errs, errors.New("RestConfig is required"))
	}
	if c.KubeconfigPath == "" {
		errs = append(errs, errors.New("KubeconfigPath is required"))
	}
	if c.WorkDir == "" {
		errs = append(errs, errors.New("WorkDir is required"))
	}
	return errors.Join(errs...)
}

// ensureNamespace creates ns unless it exists.
func ensureNamespace(ctx context.Context, cfg *rest.Config, ns string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	_, err = cs.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

func managerBinary(ctx context.Context, cfg ManagerConfig) (string, error) {
	if cfg.Binary != "" {
		return cfg.Binary, nil
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(cfg.WorkDir, "flotilla-manager")
	return out, BuildManager(ctx, root, out)
}

// BuildManager compiles the manager of the module at root into out.
func BuildManager(ctx context.Context, root, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, managerPackage)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", managerPackage, err, b)
	}
	return nil
}

// launch starts the binary on free loopback ports. The process is not tied
// to any context: it lives until Stop, or until the test process dies.
func launch(bin string, cfg ManagerConfig) (*Manager, error) {
	m, err := newManager(cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	log, err := os.Create(m.LogPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", m.LogPath, err)
	}
	defer log.Close() // the child holds its own descriptor
	m.cmd = exec.Command(bin, m.args(cfg)...)
	m.cmd.Stdout, m.cmd.Stderr = log, log
	// Own process group so Stop reaches any child; killed with the test.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startLocked(m.cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go m.reap()
	return m, nil
}

// startLocked starts cmd on a locked OS thread, because Pdeathsig fires
// when the thread that started the child exits.
func startLocked(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.Start()
}

func newManager(dir string) (*Manager, error) {
	ports, err := cluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		LogPath:     filepath.Join(dir, "flotilla-manager.log"),
		CertDir:     filepath.Join(dir, "certs"),
		MetricsAddr: loopback(ports[0]),
		ProbeAddr:   loopback(ports[1]),
		WebhookPort: ports[2],
		exited:      make(chan struct{}),
	}
	if err := os.MkdirAll(m.CertDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", m.CertDir, err)
	}
	return m, nil
}

func (m *Manager) args(cfg ManagerConfig) []string {
	args := []string{
		"--kubeconfig=" + cfg.KubeconfigPath,
		"--leader-elect=false",
		"--metrics-bind-address=" + m.MetricsAddr,
		"--health-probe-bind-address=" + m.ProbeAddr,
		"--webhook-port=" + strconv.Itoa(m.WebhookPort),
		"--webhook-host=127.0.0.1",
		"--webhook-cert-dir=" + m.CertDir,
		"--webhook-namespace=" + cfg.WebhookNamespace,
	}
	return append(args, cfg.ExtraArgs...)
}

func loopback(port int) string {
	return "127.0.0.1:" + strconv.Itoa(port)
}

func (m *Manager) reap() {
	m.exitErr = m.cmd.Wait()
	close(m.exited)
}

// waitReady polls /readyz until it answers 200, the process exits, or the
// timeout passes.
func (m *Manager) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	url := "http://" + m.ProbeAddr + "/readyz"
	for {
		if readyz(ctx, url) {
			return nil
		}
		select {
		case <-m.exited:
			return fmt.Errorf("manager exited before it was ready: %w", m.exitErr)
		case <-ctx.Done():
			return fmt.Errorf("manager not ready at %s: %w", url, ctx.Err())
		case <-tick.C:
		}
	}
}

func readyz(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// PID is the manager's process ID (also its process group ID), e.g. for
// reading its memory and CPU from /proc.
func (m *Manager) PID() int {
	return m.cmd.Process.Pid
}

// Exited is closed when the process has ended.
func (m *Manager) Exited() <-chan struct{} {
	return m.exited
}

// Stop ends the process group: SIGTERM, then SIGKILL after a grace period.
// It is safe to call more than once.
func (m *Manager) Stop() {
	m.stopOnce.Do(func() {
		pgid := -m.cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		select {
		case <-m.exited:
		case <-time.After(stopGrace):
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-m.exited
		}
	})
}

// Kill ends the process group at once with SIGKILL, as a crash or an OOM kill would, and waits for it.
func (m *Manager) Kill() {
	m.stopOnce.Do(func() {
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		<-m.exited
	})
}

// LogTail returns the last n lines of the manager's log.
func (m *Manager) LogTail(n int) string {
	b, err := os.ReadFile(m.LogPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", m.LogPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
