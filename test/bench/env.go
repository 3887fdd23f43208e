package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// ManagerName is the process name of flotilla-manager in Result.Processes.
const ManagerName = "flotilla-manager"

// ControllerManagerName is the native baseline process.
const ControllerManagerName = "kube-controller-manager"

// sampleEvery is how often a phase reads the RSS of the processes it
// follows, besides the kernel's own peak record.
const sampleEvery = time.Second

// Env is what a scenario runs against. Cluster, Config and Kube are nil
// for a scenario without a cluster; Manager is nil until StartManager.
type Env struct {
	Cluster *cluster.Cluster
	// Config is an admin configuration without a client-side rate limit,
	// speaking protobuf.
	Config  *rest.Config
	Kube    kubernetes.Interface
	Manager *framework.Manager
	// Root is the module root.
	Root string
	// WorkDir holds the manager's binary, certificates and log.
	WorkDir string

	log        io.Writer
	binary     func(context.Context) (string, error)
	scraper    *http.Client
	gateWriter kubernetes.Interface
}

// GateWriter is the client of the writes the harness makes in a controller's stead (the gated baselines'
// readiness gates set True). It authenticates as the manager does (cluster.ControllerUser), so that API Priority
// and Fairness files those writes as an installed controller's (workload-low) and not as system:masters'
// (exempt, never queued), which no controller's writes are.
func (e *Env) GateWriter(ctx context.Context) (kubernetes.Interface, error) {
	if e.gateWriter != nil {
		return e.gateWriter, nil
	}
	if e.Cluster == nil {
		return nil, fmt.Errorf("scenario has no cluster")
	}
	path, err := e.Cluster.ControllerKubeconfig(ctx)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	if e.gateWriter, err = kubernetes.NewForConfig(benchConfig(cfg)); err != nil {
		return nil, fmt.Errorf("creating the gate writer's client: %w", err)
	}
	return e.gateWriter, nil
}

// Logf prints a progress line.
func (e *Env) Logf(format string, args ...any) {
	_, _ = fmt.Fprintf(e.log, "  "+format+"\n", args...)
}

// StartManager starts flotilla-manager against the cluster and waits
// until it is ready; the runner stops it after the scenario. It runs as a
// service account would (cluster.ControllerUser), so that the API server's
// priority and fairness treat it as an installed controller.
// FLOTILLA_BENCH_MANAGER_ARGS adds flags to every scenario's manager, e.g. --pprof-addr=127.0.0.1:8090 to
// profile it while a scenario runs.
func (e *Env) StartManager(ctx context.Context, extraArgs ...string) error {
	if e.Cluster == nil {
		return fmt.Errorf("scenario has no cluster to run the manager on")
	}
	bin, err := e.binary(ctx)
	if err != nil {
		return err
	}
	kubeconfig, err := e.Cluster.ControllerKubeconfig(ctx)
	if err != nil {
		return err
	}
	m, err := framework.StartManager(ctx, framework.ManagerConfig{
		RestConfig: e.Cluster.Config(), KubeconfigPath: kubeconfig,
		WorkDir: e.WorkDir, Binary: bin, ExtraArgs: append(extraArgs, strings.Fields(os.Getenv("FLOTILLA_BENCH_MANAGER_ARGS"))...),
	})
	if err != nil {
		return fmt.Errorf("starting %s: %w", ManagerName, err)
	}
	e.Manager = m
	return nil
}

// ManagerProc is the running manager, for Measure.
func (e *Env) ManagerProc() (Proc, bool) {
	if e.Manager == nil {
		return Proc{}, false
	}
	return Proc{Name: ManagerName, PID: e.Manager.PID()}, true
}

// ControllerManagerProc is the cluster's kube-controller-manager, the
// native baseline.
func (e *Env) ControllerManagerProc() (Proc, error) {
	pid, err := FindChild(ControllerManagerName)
	if err != nil {
		return Proc{}, err
	}
	return Proc{Name: ControllerManagerName, PID: pid}, nil
}

// ManagerRequests reads the manager's request counter from its metrics
// endpoint.
func (e *Env) ManagerRequests(ctx context.Context) (map[RequestKey]float64, error) {
	samples, err := e.ManagerSamples(ctx)
	if err != nil {
		return nil, err
	}
	return ClientRequests(samples), nil
}

// ManagerSamples reads every series of the manager's metrics endpoint.
func (e *Env) ManagerSamples(ctx context.Context) ([]Sample, error) {
	if e.Manager == nil {
		return nil, fmt.Errorf("%s is not running", ManagerName)
	}
	url := "http://" + e.Manager.MetricsAddr + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("metrics request: %w", err)
	}
	resp, err := e.scraper.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading %s: %s", url, resp.Status)
	}
	return ParseText(resp.Body)
}

// APIServerSamples reads every series of the API server's metrics endpoint.
func (e *Env) APIServerSamples(ctx context.Context) ([]Sample, error) {
	raw, err := e.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return ParseText(bytes.NewReader(raw))
}

// Phase is what one measured phase cost.
type Phase struct {
	Wall time.Duration
	// ManagerRunning says whether Requests and Usage[ManagerName] were measured.
	ManagerRunning bool
	// Requests are the manager's API requests during the phase.
	Requests []RequestCount
	// Usage is per process name: the manager's (when running) and those
	// passed to Measure.
	Usage map[string]Usage
}

// Measure runs fn as the measured phase: it times it and records the
// manager's API requests and the RSS and CPU of the manager and of procs.
func (e *Env) Measure(ctx context.Context, procs []Proc, fn func(context.Context) error) (Phase, error) {
	var phase Phase
	var before map[RequestKey]float64
	if m, ok := e.ManagerProc(); ok {
		phase.ManagerRunning, procs = true, append([]Proc{m}, procs...)
		var err error
		if before, err = e.ManagerRequests(ctx); err != nil {
			return phase, err
		}
	}
	s, err := startSampler(procs, sampleEvery)
	if err != nil {
		return phase, err
	}
	begin := time.Now()
	runErr := fn(ctx)
	phase.Wall = time.Since(begin)
	if phase.Usage, err = s.finish(); err != nil {
		return phase, err
	}
	if runErr != nil {
		return phase, runErr
	}
	return phase, e.recordRequests(ctx, &phase, before)
}

func (e *Env) recordRequests(ctx context.Context, phase *Phase, before map[RequestKey]float64) error {
	if !phase.ManagerRunning {
		return nil
	}
	after, err := e.ManagerRequests(ctx)
	if err != nil {
		return err
	}
	phase.Requests = DiffRequests(before, after)
	return nil
}

// Record makes p the result's measured phase and adds the manager's
// request totals as metrics.
func (r *Result) Record(p Phase) {
	r.WallSeconds = p.Wall.Seconds()
	r.APIRequests = p.Requests
	r.Processes = p.Usage
	if p.ManagerRunning {
		r.Add(
			Metric{Name: "manager API requests", Unit: UnitCount, Value: float64(total(p.Requests))},
			Metric{Name: "manager API writes", Unit: UnitCount, Value: float64(writes(p.Requests))},
		)
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
