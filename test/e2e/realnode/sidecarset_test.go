package realnode

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
	"github.com/flotilla-dev/flotilla/test/images"
)

var sidecarSets = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "sidecarsets"}

// A hot-upgrade sidecar on a real kubelet: the test application as the sidecar (on a port of its own choosing,
// so that the old and the new version run side by side as a real hot upgrade has them) and the pause image as
// its empty image. `kubectl kruise exec -S` reaches the working container before and after the upgrade.
var _ = Describe("SidecarSet hot upgrade", func() {
	It("moves the sidecar's work to the new version's container, and exec -S follows it", func(ctx SpecContext) {
		ns := newNamespace(ctx, "hot-")
		plugin := buildPlugin(ctx)
		createHotSidecarSet(ctx, ns)
		createHotPod(ctx, ns)
		Eventually(func() string { return execSidecar(ctx, plugin, ns, "0") }).WithContext(ctx).
			WithTimeout(storyTimeout).WithPolling(time.Second).Should(HavePrefix("testapp v1: exit 0"))

		By("the exit code of the command is the plugin's")
		out, code := runPlugin(ctx, plugin, "exec", "-n", ns, "hot", "-S", "sidecar", "--", "/testapp", "exit", "3")
		Expect(code).To(Equal(3), out)

		By("upgrading the sidecar to v2")
		patch := `[{"op":"replace","path":"/spec/containers/0/image","value":"` + images.TestAppImage("v2") + `"}]`
		_, err := dyn.Resource(sidecarSets).Patch(ctx, ns, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() []string {
			p, err := kube.CoreV1().Pods(ns).Get(ctx, "hot", metav1.GetOptions{})
			if err != nil {
				return nil
			}
			return []string{p.Spec.Containers[0].Image, p.Spec.Containers[1].Image, runningImage(p, "sidecar-2")}
		}).WithContext(ctx).WithTimeout(storyTimeout).WithPolling(time.Second).Should(Equal(
			[]string{images.PauseImage, images.TestAppImage("v2"), images.TestAppImage("v2")}))
		Expect(execSidecar(ctx, plugin, ns, "0")).To(HavePrefix("testapp v2: exit 0"))
	})
})

// buildPlugin builds kubectl-kruise from this checkout.
func buildPlugin(ctx context.Context) string {
	GinkgoHelper()
	root, err := cluster.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	out := filepath.Join(GinkgoT().TempDir(), "kubectl-kruise")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./rollout/cmd/kubectl-kruise")
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(b))
	return out
}

// runPlugin runs the plugin against the cluster and returns its combined output and exit code.
func runPlugin(ctx context.Context, plugin string, args ...string) (string, int) {
	cmd := exec.CommandContext(ctx, plugin, append([]string{"--kubeconfig", testCluster.KubeconfigPath()}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	}
	if err != nil {
		return out.String() + err.Error(), -1
	}
	return out.String(), 0
}

// execSidecar runs `testapp exit <code>` in the sidecar's working container; the output names its version.
func execSidecar(ctx context.Context, plugin, ns, code string) string {
	out, _ := runPlugin(ctx, plugin, "exec", "-n", ns, "hot", "-S", "sidecar", "--", "/testapp", "exit", code)
	return lastLine(out)
}

func lastLine(s string) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(lines[len(lines)-1])
}

func runningImage(p *corev1.Pod, container string) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container && cs.State.Running != nil {
			return cs.Image
		}
	}
	return ""
}

// createHotSidecarSet creates the story's SidecarSet, named after its namespace and restricted to it.
func createHotSidecarSet(ctx context.Context, ns string) {
	GinkgoHelper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
		"metadata": map[string]any{"name": ns},
		"spec": map[string]any{
			"namespace": ns,
			"selector":  map[string]any{"matchLabels": map[string]any{"app": "hot"}},
			"containers": []any{map[string]any{
				"name": "sidecar", "image": images.TestAppImage("v1"), "imagePullPolicy": "IfNotPresent",
				"env":             []any{map[string]any{"name": "PORT", "value": "0"}},
				"upgradeStrategy": map[string]any{"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": images.PauseImage},
			}},
		},
	}}
	_, err := dyn.Resource(sidecarSets).Create(ctx, obj, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) { _ = dyn.Resource(sidecarSets).Delete(ctx, ns, metav1.DeleteOptions{}) })
	Eventually(func() (bool, error) { return framework.SidecarSetPodWebhookOn(ctx, kube) }).WithContext(ctx).
		WithTimeout(storyTimeout).WithPolling(poll).Should(BeTrue(), "the manager switches the pod webhook on")
	Eventually(func(ctx context.Context) (bool, error) {
		return framework.SidecarSetInjects(ctx, kube, ns, map[string]string{"app": "hot"})
	}).WithContext(ctx).WithTimeout(storyTimeout).WithPolling(poll).Should(BeTrue(), "the API server calls the pod webhook")
}

// createHotPod creates the app pod on the real node; the SidecarSet injects sidecar-1 and sidecar-2.
func createHotPod(ctx context.Context, ns string) {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hot", Namespace: ns, Labels: map[string]string{"app": "hot"}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"type": "real"},
			Tolerations:                   []corev1.Toleration{{Key: cluster.RealNodeTaint, Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: ptr.To[int64](podGrace),
			Containers: []corev1.Container{{Name: "app", Image: images.TestAppImage("v1"),
				ImagePullPolicy: corev1.PullIfNotPresent}},
		},
	}
	got, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect([]string{got.Spec.Containers[0].Name, got.Spec.Containers[1].Name}).To(Equal([]string{"sidecar-1", "sidecar-2"}))
}
