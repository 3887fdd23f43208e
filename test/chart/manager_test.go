package chart

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/e2e/framework"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// leaseName is the manager's leader-election ID (rollout/cmd/manager).
const leaseName = "flotilla-manager.kruise.io"

// managerBuild is the manager binary the tests build once; TestMain removes dir.
var managerBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// managerBinary builds flotilla-manager once per test process.
func managerBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("building the manager is skipped in -short mode")
	}
	managerBuild.once.Do(func() {
		managerBuild.dir, managerBuild.err = os.MkdirTemp("", "flotilla-chart-test-")
		if managerBuild.err != nil {
			return
		}
		managerBuild.path = filepath.Join(managerBuild.dir, "flotilla-manager")
		managerBuild.err = framework.BuildManager(context.Background(), repoRoot(t), managerBuild.path)
	})
	if managerBuild.err != nil {
		t.Fatal(managerBuild.err)
	}
	return managerBuild.path
}

// TestManagerAcceptsRenderedArgs parses each rendering's command line with the manager's own flag set: -h
// at the end exits 0 only if every flag before it is known and its value valid.
func TestManagerAcceptsRenderedArgs(t *testing.T) {
	bin := managerBinary(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append(render(t, c.rel).manager(t).Args, "-h")
			out, err := exec.Command(bin, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("flotilla-manager %s: %v\n%s", strings.Join(args, " "), err, lastLines(string(out), 5))
			}
		})
	}
}

// TestManagerRunsWithChartRBAC runs the manager with the chart's args and env under the chart's
// ServiceAccount, bound to nothing but the chart's RBAC: it must issue and inject its certificates (Secret,
// webhook configurations, CRDs), win the leader election (Lease, events) and start every controller's
// informers, without a single forbidden request.
func TestManagerRunsWithChartRBAC(t *testing.T) {
	managertest.RequireCluster(t, cfg)
	bin := managerBinary(t)
	rel := release{name: "flotilla", namespace: "flotilla-rbac"}
	r := render(t, rel).managerPart()
	ensureRestrictedNamespace(t, rel.namespace)
	applyRBAC(t, r)
	for _, name := range []string{"SERVICE_NAME", "SECRET_NAME"} {
		t.Setenv(name, r.env(t, name))
	}
	t.Setenv("POD_NAMESPACE", rel.namespace)
	m := startManager(t, bin, r, serviceAccountKubeconfig(t, r))
	waitLeader(t, m, rel.namespace)
	waitControllersStarted(t, m)
	if refused := grepLog(t, m, "forbidden"); len(refused) > 0 {
		t.Errorf("the manager was refused requests with the chart's RBAC:\n%s", strings.Join(refused, "\n"))
	}
}

// applyRBAC creates the ServiceAccount, roles and bindings for real, and removes the cluster-scoped ones
// and the webhook configurations the manager points at itself when the test ends.
func applyRBAC(t *testing.T, r rendered) {
	t.Helper()
	applyKinds(t, r, "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
}

// applyKinds applies the one object of each kind, and removes the cluster-scoped ones when the test ends.
func applyKinds(t *testing.T, r rendered, kinds ...string) {
	t.Helper()
	c := newClient(t, cfg)
	ctx := context.Background()
	for _, kind := range kinds {
		obj := r.one(t, kind)
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", kind, obj.GetName(), err)
		}
	}
	t.Cleanup(func() {
		for kind := range clusterScoped {
			for _, obj := range r.all(kind) {
				deleteObject(t, c, obj)
			}
		}
	})
}

func deleteObject(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	if err := c.Delete(context.Background(), obj.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates with a token of the manager's
// ServiceAccount, as the pod would.
func serviceAccountKubeconfig(t *testing.T, r rendered) string {
	t.Helper()
	namespace, sa := r.rel.namespace, r.one(t, "ServiceAccount").GetName()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	tok, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), sa, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for ServiceAccount %s/%s: %v", namespace, sa, err)
	}
	return writeKubeconfig(t, "manager", &clientcmdapi.AuthInfo{Token: tok.Status.Token})
}

// startManager runs the manager with the rendered args, but on loopback ports the framework picks, serving
// webhooks by URL (there is no pod network), and with the Lease in the release namespace (out of cluster the
// manager cannot read its namespace).
func startManager(t *testing.T, bin string, r rendered, kubeconfig string) *framework.Manager {
	t.Helper()
	var args []string
	for _, a := range r.manager(t).Args {
		name, _, _ := strings.Cut(a, "=")
		if name != "--metrics-bind-address" && name != "--health-probe-bind-address" && name != "--webhook-port" {
			args = append(args, a)
		}
	}
	args = append(args, "--leader-election-namespace="+r.rel.namespace)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := framework.StartManager(ctx, framework.ManagerConfig{
		RestConfig: cfg, KubeconfigPath: kubeconfig, WorkDir: t.TempDir(), Binary: bin,
		WebhookNamespace: r.rel.namespace, ExtraArgs: args,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return m
}

// waitLeader waits until a replica holds the leader-election Lease.
func waitLeader(t *testing.T, m *framework.Manager, namespace string) {
	t.Helper()
	c := newClient(t, cfg)
	waitFor(t, m, "the leader-election Lease", func() bool {
		lease := &coordinationv1.Lease{}
		err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: leaseName}, lease)
		return err == nil && ptr.Deref(lease.Spec.HolderIdentity, "") != ""
	})
}

// waitControllersStarted waits until every controller the manager started has synced its informers and
// started its workers; an informer refused by RBAC never syncs.
func waitControllersStarted(t *testing.T, m *framework.Manager) {
	t.Helper()
	waitFor(t, m, "every controller's workers", func() bool {
		started := len(grepLog(t, m, `"msg":"Starting Controller"`))
		return started > 0 && len(grepLog(t, m, `"msg":"Starting workers"`)) == started
	})
}

// waitFor polls cond for up to 90 s, failing at once when the manager logs a forbidden request.
func waitFor(t *testing.T, m *framework.Manager, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if refused := grepLog(t, m, "forbidden"); len(refused) > 0 {
			t.Fatalf("the manager was refused requests with the chart's RBAC:\n%s", strings.Join(refused, "\n"))
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last log lines:\n%s", what, m.LogTail(20))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// grepLog returns the manager's log lines containing s, case-insensitively.
func grepLog(t *testing.T, m *framework.Manager, s string) []string {
	t.Helper()
	data, err := os.ReadFile(m.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		if strings.Contains(strings.ToLower(line), strings.ToLower(s)) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
