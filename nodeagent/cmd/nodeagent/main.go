// Command nodeagent is flotilla-nodeagent, run once per node (DaemonSet): it executes the node's
// ContainerRecreateRequests, pulls the images of its NodeImage and runs the probes of its NodePodProbe through the
// container runtime's CRI socket. It serves /metrics and /healthz
// (failing while the runtime does not answer) on --addr, and needs env NODE_NAME.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/containermeta"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/containerrecreate"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagepuller"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/podprober"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// options are the agent's flags.
type options struct {
	addr        string
	criEndpoint string
	hostRunDir  string
	qps         float64
	burst       int
	pullWorkers int
	zap         zap.Options
}

func (o *options) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.addr, "addr", ":10221", "Address /metrics and /healthz are served on.")
	fs.StringVar(&o.criEndpoint, "cri-endpoint", "", "CRI runtime socket (unix:///path); empty probes the known sockets under --host-run-dir.")
	fs.StringVar(&o.hostRunDir, "host-run-dir", "/hostvarrun", "Where the host's /var/run is mounted, for probing the CRI socket.")
	fs.Float64Var(&o.qps, "rest-config-qps", 30, "QPS of the agent's API client.")
	fs.IntVar(&o.burst, "rest-config-burst", 50, "Burst of the agent's API client.")
	fs.IntVar(&o.pullWorkers, "max-workers-for-pull-image", imagepuller.DefaultMaxParallel, "Image pulls in flight at once; -1: no bound.")
	o.zap.BindFlags(fs)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "flotilla-nodeagent:", err)
		os.Exit(1)
	}
}

func run() error {
	var opts options
	opts.bind(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zap)))
	nodeName := os.Getenv("NODE_NAME")
	if nodeName == "" {
		return errors.New("env NODE_NAME is not set; the DaemonSet passes it with fieldRef spec.nodeName")
	}
	ctx := ctrl.SetupSignalHandler()
	rt, err := connect(ctx, opts)
	if err != nil {
		return err
	}
	defer func() { _ = rt.Close() }()
	ctrl.Log.Info("Connected to the container runtime", "endpoint", rt.Endpoint)

	mgr, err := newManager(opts, nodeName, rt)
	if err != nil {
		return err
	}
	if err := (&containerrecreate.Reconciler{NodeName: nodeName, Runtime: rt}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ContainerRecreateRequest executor: %w", err)
	}
	if err := (&containermeta.Reconciler{NodeName: nodeName, Runtime: rt}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the container meta reporter: %w", err)
	}
	if err := (&imagepuller.Reconciler{NodeName: nodeName, Images: rt, MaxParallel: opts.pullWorkers}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the image puller: %w", err)
	}
	if err := (&podprober.Reconciler{NodeName: nodeName, Runtime: rt}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the pod prober: %w", err)
	}
	ctrl.Log.Info("Starting node agent", "node", nodeName)
	return mgr.Start(ctx)
}

// connectTimeout bounds finding the runtime at start.
const connectTimeout = 30 * time.Second

func connect(ctx context.Context, opts options) (*cri.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	rt, err := cri.Connect(ctx, opts.criEndpoint, opts.hostRunDir)
	if err != nil {
		return nil, fmt.Errorf("connecting to the container runtime: %w", err)
	}
	return rt, nil
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kruiseappsv1alpha1.AddToScheme(s))
	return s
}

// newManager builds the agent's manager: no leader election (one agent per node), a cache of this node's
// active requests only, and one server for /metrics and /healthz.
func newManager(opts options, nodeName string, rt cri.Runtime) (ctrl.Manager, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = "flotilla-nodeagent"
	cfg.QPS, cfg.Burst = float32(opts.qps), opts.burst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: newScheme(),
		Metrics: metricsserver.Options{BindAddress: opts.addr, ExtraHandlers: map[string]http.Handler{
			"/healthz": healthzHandler(rt),
		}},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: cacheByObject(nodeName)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, nil
}

// healthzHandler serves /healthz (every check) and /healthz/<check>; the handler expects paths relative to
// its mount point.
// cacheByObject narrows the cache to what the agent's controllers look at on its node.
func cacheByObject(nodeName string) map[client.Object]cache.ByObject {
	byObject := containerrecreate.CacheByObject(nodeName)
	maps.Copy(byObject, containermeta.CacheByObject(nodeName))
	maps.Copy(byObject, imagepuller.CacheByObject(nodeName))
	maps.Copy(byObject, podprober.CacheByObject(nodeName))
	return byObject
}

func healthzHandler(rt cri.Runtime) http.Handler {
	h := &healthz.Handler{Checks: map[string]healthz.Checker{"cri": runtimeCheck(rt)}}
	return http.StripPrefix("/healthz", h)
}

// runtimeCheck fails while the container runtime does not answer Version.
func runtimeCheck(rt cri.Runtime) healthz.Checker {
	return func(req *http.Request) error {
		_, err := rt.Version(req.Context())
		return err
	}
}
