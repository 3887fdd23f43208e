package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options selects what Start runs. The zero value is etcd and
// kube-apiserver with the chart's CRDs.
type Options struct {
	// BinDir holds the binaries; default $FLOTILLA_BIN_DIR, else <repo root>/bin.
	BinDir string
	// CRDDirs are directories of CRD manifests to install and wait
	// Established; nil means [<repo>/charts/flotilla/crds], an empty
	// non-nil slice installs none. Missing or empty directories are
	// skipped.
	CRDDirs []string
	// GatewayAPI also installs the standard Gateway API CRDs of the
	// sigs.k8s.io/gateway-api module in go.mod.
	GatewayAPI bool
	// ControllerManager starts kube-controller-manager.
	ControllerManager bool
	// Controllers overrides DefaultControllers.
	Controllers []string
	// Scheduler starts kube-scheduler.
	Scheduler bool
	// Nodes > 0 starts kwok and creates that many Ready nodes
	// (NodeNamePrefix + index). Pods reach them through the scheduler or
	// an explicit spec.nodeName.
	Nodes int
	// PodsPerNode is each node's pod capacity; default 110.
	PodsPerNode int
	// RealNode adds a node that runs its pods: a kubelet (bin/kubelet) on
	// containerd, runc and the bridge CNI plugin of this machine (see
	// realnode.go). It needs root and those packages; without them Start
	// fails with an error that wraps ErrRealNodeUnavailable.
	RealNode bool
	// Args adds flags per binary ("etcd", "kube-apiserver",
	// "kube-controller-manager", "kube-scheduler", "kwok"), after the
	// defaults so they win.
	Args map[string][]string
	// Log receives progress lines with phase timings; nil is quiet unless
	// FLOTILLA_CLUSTER_LOG is set, which selects stderr. Process output
	// always goes to files in Dir()/logs.
	Log io.Writer
}

// Cluster is a running local control plane. Its processes outlive the
// context given to Start and end with Stop (or with this process).
type Cluster struct {
	opts       Options
	binDir     string
	dir        string // certificates, kubeconfigs, logs
	etcdDir    string // on tmpfs when available
	logDir     string
	pki        *pki
	config     *rest.Config
	kubeconfig string

	logMu sync.Mutex
	log   io.Writer

	procMu sync.Mutex
	procs  []*process

	// realNode is set when Options.RealNode asked for one; its network is
	// claimed before the certificates, which name its Service address.
	realNode *RealNode

	stopOnce sync.Once
	stopErr  error
}

// startTimeout bounds Start when ctx has no deadline of its own.
const startTimeout = 3 * time.Minute

// Start brings the control plane up and returns once everything
// requested is ready. On error, everything already started is stopped.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}
	if err := c.run(ctx); err != nil {
		return nil, c.abort(err, !errors.Is(ctx.Err(), context.Canceled))
	}
	return c, nil
}

// abort stops a cluster that failed to start, keeping its process logs
// unless the caller gave up (the error names files in the directory Stop
// removes).
func (c *Cluster) abort(err error, keepLogs bool) error {
	if keepLogs {
		if dir, saveErr := c.saveLogs(); saveErr == nil {
			err = fmt.Errorf("%w (process logs kept in %s)", err, dir)
		}
	}
	if stopErr := c.Stop(); stopErr != nil {
		err = errors.Join(err, stopErr)
	}
	return err
}

func newCluster(opts Options) (*Cluster, error) {
	binDir, err := resolveBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if err := findBinaries(binDir, requiredBinaries(opts)); err != nil {
		return nil, err
	}
	if opts.RealNode {
		if err := RealNodeSupport(binDir); err != nil {
			return nil, err
		}
	}
	removeStaleDirs()
	c := &Cluster{opts: opts, binDir: binDir, log: opts.Log}
	if c.log == nil && os.Getenv("FLOTILLA_CLUSTER_LOG") != "" {
		c.log = os.Stderr
	}
	if err := c.makeDirs(); err != nil {
		return nil, errors.Join(err, c.removeDirs())
	}
	return c, nil
}

func requiredBinaries(opts Options) []string {
	names := []string{"etcd", "kube-apiserver"}
	if opts.ControllerManager {
		names = append(names, "kube-controller-manager")
	}
	if opts.Scheduler {
		names = append(names, "kube-scheduler")
	}
	if opts.Nodes > 0 {
		names = append(names, "kwok")
	}
	if opts.RealNode {
		names = append(names, "kubelet")
	}
	return names
}

// run starts the processes in dependency order; what only needs the
// apiserver starts in parallel.
func (c *Cluster) run(ctx context.Context) error {
	begin := time.Now()
	if c.opts.RealNode {
		if err := c.phase("real node network", c.claimRealNode); err != nil {
			return err
		}
	}
	files, err := c.writePKI()
	if err != nil {
		return err
	}
	var etcdURL, host string
	if err := c.phase("etcd", func() (err error) { etcdURL, err = c.startEtcd(ctx); return err }); err != nil {
		return err
	}
	if err := c.phase("kube-apiserver", func() (err error) { host, err = c.startAPIServer(ctx, etcdURL, files); return err }); err != nil {
		return err
	}
	if err := c.setClientConfig(host); err != nil {
		return err
	}
	if err := c.startAddons(ctx); err != nil {
		return err
	}
	c.logf("cluster ready in %v (dir %s)", time.Since(begin).Round(time.Millisecond), c.dir)
	return nil
}

func (c *Cluster) writePKI() (pkiFiles, error) {
	var files pkiFiles
	err := c.phase("certificates", func() error {
		p, err := newPKI(c.serviceIP())
		if err != nil {
			return err
		}
		c.pki = p
		files, err = p.write(filepath.Join(c.dir, "pki"))
		return err
	})
	return files, err
}

func (c *Cluster) setClientConfig(host string) error {
	c.config = restConfig(host, c.pki.ca, c.pki.admin)
	path, err := writeKubeconfig(c.dir, "admin", c.config)
	c.kubeconfig = path
	return err
}

// startAddons installs CRDs and starts the optional components, all at
// once: each needs only the apiserver.
func (c *Cluster) startAddons(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return c.phase("CRDs", func() error { return c.installCRDs(ctx) }) })
	if c.opts.ControllerManager {
		g.Go(func() error {
			return c.phase("kube-controller-manager", func() error { return c.startControllerManager(ctx) })
		})
	}
	if c.opts.Scheduler {
		g.Go(func() error { return c.phase("kube-scheduler", func() error { return c.startScheduler(ctx) }) })
	}
	if c.opts.Nodes > 0 {
		g.Go(func() error { return c.phase("kwok nodes", func() error { return c.startKwokNodes(ctx) }) })
	}
	if c.realNode != nil {
		g.Go(func() error { return c.phase("real node", func() error { return c.startRealNode(ctx) }) })
	}
	return g.Wait()
}

func (c *Cluster) startKwokNodes(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	return c.startKwok(ctx, client)
}

func (c *Cluster) installCRDs(ctx context.Context) error {
	dirs := c.opts.CRDDirs
	if dirs == nil {
		var err error
		if dirs, err = defaultCRDDirs(); err != nil {
			return err
		}
	}
	if c.opts.GatewayAPI {
		dir, err := gatewayCRDDir()
		if err != nil {
			return err
		}
		dirs = append(slices.Clip(dirs), dir)
	}
	return InstallCRDs(ctx, c.Config(), dirs...)
}

// Config returns a copy of the admin (system:masters) client configuration.
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.config) }

// KubeconfigPath is the admin kubeconfig file.
func (c *Cluster) KubeconfigPath() string { return c.kubeconfig }

// Dir is the cluster's temporary directory; process logs are in Dir()/logs.
func (c *Cluster) Dir() string { return c.dir }

// Kubectl runs bin/kubectl against the cluster as admin and returns its
// combined output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "kubectl"),
		append([]string{"--kubeconfig=" + c.kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = childAttr()
	if err := startLocked(cmd); err != nil {
		return nil, fmt.Errorf("start kubectl: %w", err)
	}
	if err := cmd.Wait(); err != nil {
		return out.Bytes(), fmt.Errorf("kubectl %v: %w: %s", args, err, bytes.TrimSpace(out.Bytes()))
	}
	return out.Bytes(), nil
}

// Stop kills every process of the cluster, waits for them to exit and
// removes the temporary directories. It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		begin := time.Now()
		c.stopProcesses()
		c.stopErr = errors.Join(c.releaseRealNode(), c.removeDirs())
		c.logf("cluster stopped in %v", time.Since(begin).Round(time.Millisecond))
	})
	return c.stopErr
}

// stopProcesses stops the dependents together, then the apiserver, then
// etcd, so no component spends its grace period retrying a dead server.
func (c *Cluster) stopProcesses() {
	c.procMu.Lock()
	procs := c.procs
	c.procs = nil
	c.procMu.Unlock()
	var core, dependents []*process
	for _, p := range procs {
		if p.name == "etcd" || p.name == "kube-apiserver" {
			core = append(core, p)
		} else {
			dependents = append(dependents, p)
		}
	}
	var wg sync.WaitGroup
	for _, p := range dependents {
		wg.Go(p.stop)
	}
	wg.Wait()
	for i := len(core) - 1; i >= 0; i-- {
		core[i].stop()
	}
}

// start launches binDir/name with args plus Options.Args[name] and
// records it for Stop.
func (c *Cluster) start(name string, args, env []string) (*process, error) {
	args = append(slices.Clip(args), c.opts.Args[name]...)
	p, err := startProcess(name, filepath.Join(c.binDir, name), args, env, c.logDir)
	if err != nil {
		return nil, err
	}
	c.procMu.Lock()
	defer c.procMu.Unlock()
	c.procs = append(c.procs, p)
	return p, nil
}

// startHost launches a program of this machine (found in PATH) under
// name and records it for Stop.
func (c *Cluster) startHost(name, command string, args ...string) (*process, error) {
	bin, err := exec.LookPath(command)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p, err := startProcess(name, bin, args, nil, c.logDir)
	if err != nil {
		return nil, err
	}
	c.procMu.Lock()
	defer c.procMu.Unlock()
	c.procs = append(c.procs, p)
	return p, nil
}

// forget stops p and drops it from the cluster (a failed attempt).
func (c *Cluster) forget(p *process) {
	p.stop()
	c.procMu.Lock()
	defer c.procMu.Unlock()
	c.procs = slices.DeleteFunc(c.procs, func(q *process) bool { return q == p })
}

// phase runs fn and logs how long it took.
func (c *Cluster) phase(name string, fn func() error) error {
	begin := time.Now()
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c.logf("%-24s ready in %v", name, time.Since(begin).Round(time.Millisecond))
	return nil
}

func (c *Cluster) logf(format string, args ...any) {
	if c.log == nil {
		return
	}
	c.logMu.Lock()
	defer c.logMu.Unlock()
	_, _ = fmt.Fprintf(c.log, "cluster: "+format+"\n", args...)
}

// BinDir is the directory the control-plane binaries (and kubectl) were taken from.
func (c *Cluster) BinDir() string { return c.binDir }
