// Package integration runs the real kubectl-kruise binary against a local control plane. No manager runs:
// the tests write Rollout statuses themselves, so every state is exact and every run the same.
package integration

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// Set by TestMain; empty with -short, which skips these tests.
var (
	binary     string
	kubeconfig string
	k8s        client.Client
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(runWithCluster(m))
}

func runWithCluster(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kubectl-kruise-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	crds, err := prepare(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return cluster.RunTests(m, cluster.Options{CRDDirs: []string{crds}}, func(c *cluster.Cluster) {
		kubeconfig = c.KubeconfigPath()
		k8s, err = client.New(c.Config(), client.Options{Scheme: testScheme()})
		if err != nil {
			panic(err)
		}
	})
}

// prepare builds the binary into dir and copies the CRDs the CLI reads (the other CRDs of the chart
// would only slow the start).
func prepare(dir string) (string, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", err
	}
	binary = filepath.Join(dir, "kubectl-kruise")
	build := exec.Command("go", "build", "-o", binary, "./rollout/cmd/kubectl-kruise")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kubectl-kruise: %w\n%s", err, out)
	}
	crds := filepath.Join(dir, "crds")
	if err := os.Mkdir(crds, 0o755); err != nil {
		return "", err
	}
	for _, f := range []string{"rollouts.kruise.io_rollouts.yaml", "rollouts.kruise.io_batchreleases.yaml",
		"apps.kruise.io_clonesets.yaml", "apps.kruise.io_statefulsets.yaml", "apps.kruise.io_daemonsets.yaml",
		"apps.kruise.io_advancedcronjobs.yaml", "apps.kruise.io_broadcastjobs.yaml", "apps.kruise.io_containerrecreaterequests.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "charts/flotilla/crds", f))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(crds, f), data, 0o600); err != nil {
			return "", err
		}
	}
	return crds, nil
}

func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	for _, add := range []func(*runtime.Scheme) error{rolloutsv1beta1.AddToScheme, kruiseappsv1alpha1.AddToScheme, kruiseappsv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

func needCluster(t *testing.T) {
	t.Helper()
	if k8s == nil {
		t.Skip("needs the local control plane (not in -short mode)")
	}
}

// result is how a run of the binary ended.
type result struct {
	code           int
	stdout, stderr string
}

// kruise runs the binary to its end with the cluster's kubeconfig.
func kruise(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := start(ctx, t, args...)
	return p.wait(t)
}

// process is the binary running in the background; its output can be read while it runs.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
}

func start(ctx context.Context, t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	p.cmd = exec.CommandContext(ctx, binary, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting kubectl-kruise: %v", err)
	}
	return p
}

func (p *process) wait(t *testing.T) result {
	t.Helper()
	err := p.cmd.Wait()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running kubectl-kruise: %v", err)
	}
	return result{code: code, stdout: p.stdout.String(), stderr: p.stderr.String()}
}

// syncBuffer is a bytes.Buffer the test reads while the process writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// namespace creates a namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kruise-cli-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return ns.Name
}

// createRollout creates a three-step canary Rollout (1 pod with approval, 50% for 60s, 100%), or a
// two-step blue-green one.
func createRollout(t *testing.T, ns, name string, blueGreen bool) *rolloutsv1beta1.Rollout {
	t.Helper()
	steps := []rolloutsv1beta1.CanaryStep{
		{Replicas: ptr.To(intstr.FromInt32(1))},
		{Replicas: ptr.To(intstr.FromString("50%")), Pause: rolloutsv1beta1.RolloutPause{Duration: ptr.To[int32](60)}},
		{Replicas: ptr.To(intstr.FromString("100%"))},
	}
	strategy := rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{Steps: steps}}
	if blueGreen {
		strategy = rolloutsv1beta1.RolloutStrategy{BlueGreen: &rolloutsv1beta1.BlueGreenStrategy{Steps: steps[:2]}}
	}
	ro := &rolloutsv1beta1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Strategy:    strategy,
		},
	}
	if err := k8s.Create(context.Background(), ro); err != nil {
		t.Fatal(err)
	}
	return ro
}

// setStep writes a mid-release status at a step and state, as the controller would.
func setStep(t *testing.T, ro *rolloutsv1beta1.Rollout, index int32, state rolloutsv1beta1.CanaryStepState, conds ...rolloutsv1beta1.RolloutCondition) {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(ro), ro); err != nil {
		t.Fatal(err)
	}
	common := rolloutsv1beta1.CommonStatus{
		CurrentStepIndex: index, NextStepIndex: index + 1, CurrentStepState: state,
		PodTemplateHash: "rev2", StableRevision: "rev1", LastUpdateTime: ptr.To(metav1.Now()),
	}
	st := rolloutsv1beta1.RolloutStatus{
		ObservedGeneration: ro.Generation, Phase: rolloutsv1beta1.RolloutPhaseProgressing,
		CurrentStepIndex: index, CurrentStepState: state, Conditions: conds,
	}
	if state == rolloutsv1beta1.CanaryStepStateCompleted {
		st.Phase = rolloutsv1beta1.RolloutPhaseHealthy
	}
	if ro.Spec.Strategy.BlueGreen != nil {
		st.BlueGreenStatus = &rolloutsv1beta1.BlueGreenStatus{CommonStatus: common, UpdatedReplicas: 1, UpdatedReadyReplicas: 1}
	} else {
		st.CanaryStatus = &rolloutsv1beta1.CanaryStatus{CommonStatus: common, CanaryReplicas: 1, CanaryReadyReplicas: 1}
	}
	ro.Status = st
	if err := k8s.Status().Update(ctx, ro); err != nil {
		t.Fatal(err)
	}
}

func getRollout(t *testing.T, ns, name string) *rolloutsv1beta1.Rollout {
	t.Helper()
	ro := &rolloutsv1beta1.Rollout{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ro); err != nil {
		t.Fatal(err)
	}
	return ro
}

// eventually polls cond for up to a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
