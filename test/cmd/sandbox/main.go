// Command sandbox runs Flotilla on a local control plane with simulated nodes: `make sandbox`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}

func run() error {
	nodes := flag.Int("nodes", 3, "number of kwok-simulated nodes")
	manager := flag.String("manager", "", "prebuilt flotilla-manager binary (default: build it)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Println("Starting the local control plane...")
	c, err := cluster.Start(ctx, cluster.Options{
		ControllerManager: true, Scheduler: true, Nodes: *nodes, GatewayAPI: true, Log: os.Stdout,
	})
	if err != nil {
		return err
	}
	defer c.Stop() //nolint:errcheck // best effort on the way out; Stop reports nothing actionable here

	fmt.Println("Starting flotilla-manager...")
	m, err := framework.StartManager(ctx, framework.ManagerConfig{
		RestConfig: c.Config(), KubeconfigPath: c.KubeconfigPath(), WorkDir: c.Dir(), Binary: *manager,
	})
	if err != nil {
		return err
	}
	defer m.Stop()

	printWelcome(c, m)
	select {
	case <-ctx.Done():
		fmt.Println("\nStopping the sandbox...")
	case <-m.Exited():
		return fmt.Errorf("flotilla-manager exited; its log:\n%s", m.LogTail(40))
	}
	return nil
}

func printWelcome(c *cluster.Cluster, m *framework.Manager) {
	kubectl := filepath.Join(c.BinDir(), "kubectl")
	fmt.Printf(`
Flotilla is running.

  export KUBECONFIG=%s
  alias kubectl=%s

Manager: log %s, metrics http://%s/metrics, probes http://%s/readyz

Things to try:
  kubectl get crd | grep kruise.io
  kubectl create deployment web --image=nginx:1.27 --replicas=3 && kubectl get pods -o wide
  kubectl apply -f docs/examples/rollout-batches.yaml && kubectl get rollout rollout
  kubectl set env deployment/workload VERSION=version-2 && kubectl get rollout rollout   # step 1: one new pod
  kubectl patch rollout rollout --subresource=status --type=merge -p '{"status":{"canaryStatus":{"currentStepState":"StepReady"}}}'
  kubectl get rollouts.v1beta1.rollouts.kruise.io rollout -o yaml   # v1beta1, served by the conversion webhook
  (docs/rollout.md walks through the rest)
  kubectl apply -f docs/examples/rollout-nginx-canary.yaml && kubectl set env deployment/echoserver NODE_NAME=version2
  kubectl get svc,ingress   # echoserver-canary Service and Ingress, canary-weight "5" (docs/traffic.md)
  kubectl apply -f docs/examples/cloneset-rollout.yaml && kubectl get clonesets,pods
  kubectl patch cloneset nginx --type=json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:alpine"}]'
  kubectl get pods   # one pod updated in place: same name, RESTARTS 1; approve the Rollout for the next batches (docs/cloneset.md)

Press Ctrl-C to stop everything.
`, c.KubeconfigPath(), kubectl, m.LogPath, m.MetricsAddr, m.ProbeAddr)
}
