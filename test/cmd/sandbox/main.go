// Command sandbox runs Flotilla on a local control plane with simulated nodes and, where this machine can,
// a real node: `make sandbox`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
	"github.com/flotilla-dev/flotilla/test/images"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}

type options struct {
	nodes     int
	realNode  bool
	manager   string
	nodeAgent string
}

func run() error {
	var o options
	flag.IntVar(&o.nodes, "nodes", 3, "number of kwok-simulated nodes")
	flag.BoolVar(&o.realNode, "real-node", true, "also run a real node (kubelet, containerd), where this machine can")
	flag.StringVar(&o.manager, "manager", "", "prebuilt flotilla-manager binary (default: build it)")
	flag.StringVar(&o.nodeAgent, "nodeagent", "", "prebuilt flotilla-nodeagent binary for the real node (default: build it)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.realNode {
		if err := cluster.RealNodeSupport(""); err != nil {
			fmt.Printf("No real node: %v\n", err)
			o.realNode = false
		}
	}

	fmt.Println("Starting the local control plane...")
	c, err := cluster.Start(ctx, cluster.Options{
		ControllerManager: true, Scheduler: true, Nodes: o.nodes, RealNode: o.realNode, GatewayAPI: true, Log: os.Stdout,
	})
	if err != nil {
		return err
	}
	defer c.Stop() //nolint:errcheck // best effort on the way out; Stop reports nothing actionable here

	fmt.Println("Starting flotilla-manager...")
	m, err := framework.StartManager(ctx, framework.ManagerConfig{
		RestConfig: c.Config(), KubeconfigPath: c.KubeconfigPath(), WorkDir: c.Dir(), Binary: o.manager,
	})
	if err != nil {
		return err
	}
	defer m.Stop()

	agentExited, err := startRealNode(ctx, c, o.nodeAgent)
	if err != nil {
		return err
	}
	printWelcome(c, m)
	select {
	case <-ctx.Done():
		fmt.Println("\nStopping the sandbox...")
	case <-m.Exited():
		return fmt.Errorf("flotilla-manager exited; its log:\n%s", m.LogTail(40))
	case <-agentExited:
		return errors.New("flotilla-nodeagent exited; its log is in " + c.Dir())
	}
	return nil
}

// startRealNode imports the test application's images into the real node and runs the node agent for it;
// without a real node it does nothing. The returned channel closes if the agent exits.
func startRealNode(ctx context.Context, c *cluster.Cluster, binary string) (<-chan struct{}, error) {
	node := c.RealNode()
	if node == nil {
		return nil, nil
	}
	fmt.Println("Importing flotilla.test/testapp:v1 and :v2 into the real node and starting its node agent...")
	root, err := cluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	built, err := images.BuildTestApp(ctx, root, c.Dir(), "v1", "v2")
	if err != nil {
		return nil, err
	}
	for _, r := range built {
		if err := node.ImportImages(ctx, r.Archive); err != nil {
			return nil, err
		}
	}
	if binary == "" {
		binary = filepath.Join(c.Dir(), "flotilla-nodeagent")
		if err := images.GoBuild(ctx, root, "./nodeagent/cmd/nodeagent", binary, ""); err != nil {
			return nil, err
		}
	}
	a, err := framework.StartNodeAgent(ctx, framework.NodeAgentConfig{
		Binary: binary, NodeName: node.Name, CRIEndpoint: node.CRIEndpoint, KubeconfigPath: c.KubeconfigPath(), WorkDir: c.Dir(),
	})
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, a.Stop)
	return a.Exited(), nil
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
`, c.KubeconfigPath(), kubectl, m.LogPath, m.MetricsAddr, m.ProbeAddr)
	if c.RealNode() != nil {
		fmt.Print(`
On the real node (a kubelet on containerd; the kwok nodes are simulated):
  kubectl apply -f docs/examples/realnode/cloneset.yaml && kubectl get pods -l app=demo -o wide
  kubectl patch cloneset demo --type=json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"flotilla.test/testapp:v2"}]'
  kubectl get pods -l app=demo -o wide   # same pods and IPs, RESTARTS 1: the kubelet restarted each container
  curl http://<pod IP>:8080/             # v2
  kubectl create -f - <<<'{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ContainerRecreateRequest","metadata":{"name":"restart"},"spec":{"podName":"<pod>","containers":[{"name":"app"}]}}'
`)
	}
	fmt.Print("\nPress Ctrl-C to stop everything.\n")
}
