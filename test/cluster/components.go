package cluster

import (
	"context"
	"slices"
	"strconv"
	"strings"
)

// DefaultControllers are the kube-controller-manager controllers started
// when Options.Controllers is empty: the workload controllers Flotilla is
// compared with and builds on, garbage collection, endpoint slices and PV
// binding, plus the service account controller (without the "default"
// ServiceAccount the ServiceAccount admission plugin rejects every pod in a
// new namespace) and the namespace controller (without it a deleted
// namespace stays Terminating forever).
var DefaultControllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"statefulset-controller",
	"daemonset-controller",
	"job-controller",
	"garbage-collector-controller",
	"endpointslice-controller",
	"persistentvolume-binder-controller",
	"serviceaccount-controller",
	"namespace-controller",
}

// startControllerManager runs kube-controller-manager with its own
// identity and waits for /healthz.
func (c *Cluster) startControllerManager(ctx context.Context) error {
	kubeconfig, err := writeKubeconfig(c.dir, "kube-controller-manager",
		restConfig(c.config.Host, c.pki.ca, c.pki.controllerManager))
	if err != nil {
		return err
	}
	controllers := c.opts.Controllers
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	if c.realNode != nil {
		// A real kubelet mounts every pod's service account volume, which holds the kube-root-ca.crt
		// ConfigMap this controller publishes into each namespace; without it pods never start.
		controllers = append(slices.Clip(controllers), "root-ca-certificate-publisher-controller")
	}
	return c.startComponent(ctx, "kube-controller-manager", []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--use-service-account-credentials=true",
		"--leader-elect=false",
	})
}

// startScheduler runs kube-scheduler with its own identity and waits for
// /healthz.
func (c *Cluster) startScheduler(ctx context.Context) error {
	kubeconfig, err := writeKubeconfig(c.dir, "kube-scheduler",
		restConfig(c.config.Host, c.pki.ca, c.pki.scheduler))
	if err != nil {
		return err
	}
	return c.startComponent(ctx, "kube-scheduler", []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
	})
}

// startComponent serves the component's health endpoint on a free
// loopback port (never the well-known one, clusters run side by side) and
// retries when that port was taken in the meantime.
func (c *Cluster) startComponent(ctx context.Context, name string, args []string) error {
	for attempt := 1; ; attempt++ {
		p, err := c.tryComponent(ctx, name, args)
		if err == nil {
			return nil
		}
		if p == nil || !portInUse(p) || attempt == portAttempts {
			return err
		}
		c.logf("%s: port taken, retrying", name)
	}
}

func (c *Cluster) tryComponent(ctx context.Context, name string, args []string) (*process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args = append(args[:len(args):len(args)], "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))
	p, err := c.start(name, args, nil)
	if err != nil {
		return nil, err
	}
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	if err := waitHealthy(ctx, p, url, insecureClient()); err != nil {
		c.forget(p)
		return p, err
	}
	return p, nil
}
