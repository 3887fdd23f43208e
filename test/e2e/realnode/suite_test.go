// Package realnode runs Flotilla's user stories on a real node: the chart installed from the images that
// `make images` builds, with the manager and the node agent as real pods, CloneSets updated in place by a
// real kubelet, and ContainerRecreateRequests executed on real containers. Kwok nodes stand beside the real
// one, as in the other suites; they stay the tool for scale.
package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/format"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/images"
)

const (
	// realNodeRequiredEnv set to "required" (make test, where make installed the runtime) turns a machine
	// without a real node into a failure instead of a skip.
	realNodeRequiredEnv = "FLOTILLA_REAL_NODE"
	// flotillaNamespace is where the chart goes (the manager's default webhook namespace).
	flotillaNamespace = "flotilla-system"
	release           = "flotilla"
	clientTimeout     = 30 * time.Second
	poll              = 250 * time.Millisecond
)

// Shared by every spec; set once by BeforeSuite.
var (
	testCluster *cluster.Cluster
	node        *cluster.RealNode
	kube        kubernetes.Interface
	dyn         dynamic.Interface
	// products are the manager and node agent images built from this checkout, by name.
	products = map[string]images.Result{}
	// testApp are the test application's images, by version.
	testApp = map[string]images.Result{}
	// agentPort is where the node agent serves /metrics and /healthz on the node's network.
	agentPort int
)

func TestRealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster with a real node; skipped in -short mode")
	}
	if err := cluster.RealNodeSupport(""); err != nil {
		if os.Getenv(realNodeRequiredEnv) == "required" {
			t.Fatal(err)
		}
		t.Skip(err.Error())
	}
	RegisterFailHandler(Fail)
	format.RegisterCustomFormatter(func(v any) (string, bool) {
		if err, ok := v.(error); ok {
			return err.Error(), true
		}
		return "", false
	})
	RunSpecs(t, "Flotilla on a real node")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	By("starting a cluster with two kwok nodes and a real node")
	c, err := cluster.Start(ctx, cluster.Options{
		ControllerManager: true, Scheduler: true, Nodes: 2, RealNode: true, Log: GinkgoWriter,
	})
	failOnError(err, "starting the cluster")
	DeferCleanup(c.Stop)
	DeferCleanup(keepLogsOnFailure, c)
	testCluster, node = c, c.RealNode()
	cfg := c.Config()
	cfg.Timeout = clientTimeout
	kube = kubernetes.NewForConfigOrDie(cfg)
	dyn = dynamic.NewForConfigOrDie(cfg)

	By("building the images from this checkout and importing them into the node")
	failOnError(buildAndImport(ctx), "building the images")

	By("installing the chart with its default image tags")
	failOnError(installChart(ctx), "installing the chart")
}, NodeTimeout(20*time.Minute))

// anyFailed is set by the first failed spec: the cluster's logs (kubelet, containerd, control plane) are
// kept then.
var anyFailed bool

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		anyFailed = true
	}
})

func keepLogsOnFailure(c *cluster.Cluster) {
	if !anyFailed && !CurrentSpecReport().Failed() {
		return
	}
	if dir, err := c.SaveLogs(); err == nil {
		GinkgoWriter.Printf("cluster logs kept in %s\n", dir)
	}
}

func failOnError(err error, what string) {
	GinkgoHelper()
	if err != nil {
		Fail(what + ": " + err.Error())
	}
}

// buildAndImport builds flotilla-manager and flotilla-nodeagent as `make images` does, and the test
// application's v1 and v2, and imports them all into the real node.
func buildAndImport(ctx context.Context) error {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	dir := GinkgoT().TempDir()
	stamp, err := images.DefaultStamp(ctx, root)
	if err != nil {
		return err
	}
	built, err := images.BuildProducts(ctx, root, dir, stamp)
	if err != nil {
		return err
	}
	apps, err := images.BuildTestApp(ctx, root, dir, "v1", "v2")
	if err != nil {
		return err
	}
	for i, r := range built {
		products[images.Products[i].Name] = r
	}
	for _, r := range apps {
		testApp[r.Ref.TagStr()] = r
	}
	var archives []string
	for _, r := range append(built, apps...) {
		archives = append(archives, r.Archive)
	}
	return node.ImportImages(ctx, archives...)
}

// installChart runs `helm install --wait` with the chart's default images: one manager replica and the
// node agent, both pinned to the real node (the kwok nodes cannot run them), the agent pointed at the
// node's containerd socket under the host /var/run it mounts. The manager runs the sidecar terminator and
// the ImagePullJob controllers, whose gates are off by default.
func installChart(ctx context.Context) error {
	ports, err := cluster.FreePorts(1)
	if err != nil {
		return err
	}
	agentPort = ports[0]
	values := fmt.Sprintf(`replicas: 1
nodeSelector: {type: real}
tolerations: [{key: %[1]s, operator: Exists}]
featureGates: {SidecarTerminator: true, ImagePullJobGate: true}
nodeAgent:
  criEndpoint: unix:///hostvarrun%[2]s
  port: %[3]d
  nodeSelector: {type: real}
  logLevel: debug
`, cluster.RealNodeTaint, strings.TrimPrefix(node.SocketPath, "/run"), ports[0])
	file := filepath.Join(GinkgoT().TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o644); err != nil {
		return err
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(testCluster.BinDir(), "helm"), "install", release,
		filepath.Join(root, "charts", "flotilla"), "--kubeconfig", testCluster.KubeconfigPath(),
		"--namespace", flotillaNamespace, "--create-namespace", "--values", file, "--wait", "--timeout", "3m")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("helm install: %w\n%s\n%s", err, out, describeFlotillaPods(ctx))
	}
	return nil
}
