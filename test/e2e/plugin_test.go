package e2e

import (
	"context"
	"errors"
	"os/exec"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kruise runs the kubectl-kruise binary built from this repository against the suite's cluster and returns its
// output and exit code.
func kruise(ctx context.Context, bin, ns string, args ...string) (string, int) {
	GinkgoHelper()
	args = append([]string{"--kubeconfig", testCluster.KubeconfigPath(), "-n", ns}, args...)
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	Expect(err).NotTo(HaveOccurred())
	return string(out), 0
}

var _ = Describe("kubectl-kruise against the manager", Ordered, func() {
	var bin string

	BeforeAll(func(ctx SpecContext) {
		bin = binaryOf(ctx, "./rollout/cmd/kubectl-kruise", "kubectl-kruise")
	}, NodeTimeout(3*time.Minute))

	It("follows a release, approves it with --wait and reports it done, with CI exit codes", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 100%")
		s.setVersion(ctx, "v2")

		out, code := kruise(ctx, bin, s.ns, "rollout", "status", "rollout/app", "--timeout", "2m")
		Expect(code).To(Equal(3), "waiting for approval:\n%s", out)
		Expect(s.pods(ctx)).To(Equal(map[string]int{"v1": 3, "v2": 1}))
		_, code = kruise(ctx, bin, s.ns, "rollout", "status", "rollout/app", "--timeout", "2m", "--success-on-pause")
		Expect(code).To(Equal(0))

		out, code = kruise(ctx, bin, s.ns, "rollout", "approve", "rollout/app", "--wait", "--timeout", "2m")
		Expect(code).To(Equal(0), "%s", out)
		Expect(out).To(ContainSubstring("rollout.rollouts.kruise.io/app approved"))
		out, code = kruise(ctx, bin, s.ns, "rollout", "status", "rollout/app", "--timeout", "2m")
		Expect(code).To(Equal(0), "done:\n%s", out)
		s.waitPods(ctx, map[string]int{"v2": 4})

		out, code = kruise(ctx, bin, s.ns, "rollout", "approve", "rollout/app")
		Expect(code).To(Equal(1), "nothing to approve:\n%s", out)
		Expect(out).To(ContainSubstring("StepPaused"))
	})

	It("drives an Advanced StatefulSet: set image, rollout status, history, undo, restart and scale", func(ctx SpecContext) {
		ns := newNamespace(ctx, "plugin-asts-")
		name := applySeedSet(ctx, "015-statefulset-nginx-a.yaml", ns, func(obj *unstructured.Unstructured) {
			withImage("nginx:latest")(obj)
			setField(int64(3), "spec", "replicas")(obj)
			setField(int64(0), "spec", "updateStrategy", "rollingUpdate", "partition")(obj)
			setField(int64(0), "spec", "updateStrategy", "rollingUpdate", "inPlaceUpdateStrategy", "gracePeriodSeconds")(obj)
		})
		waitSet(ctx, ns, name, 3, 3)
		images := func() []string {
			var out []string
			for _, p := range setPods(ctx, ns, name) {
				out = append(out, p.Spec.Containers[0].Image)
			}
			return out
		}

		out, code := kruise(ctx, bin, ns, "set", "image", "asts/"+name, "nginx=nginx:alpine")
		Expect(code).To(Equal(0), "%s", out)
		out, code = kruise(ctx, bin, ns, "rollout", "status", "asts/"+name, "--timeout", "2m")
		Expect(code).To(Equal(0), "%s", out)
		waitSet(ctx, ns, name, 3, 3)
		Expect(images()).To(Equal([]string{"nginx:alpine", "nginx:alpine", "nginx:alpine"}))

		out, code = kruise(ctx, bin, ns, "rollout", "history", "asts/"+name)
		Expect(code).To(Equal(0), "%s", out)
		Expect(out).To(And(ContainSubstring("1"), ContainSubstring("2")))
		out, code = kruise(ctx, bin, ns, "rollout", "undo", "asts/"+name)
		Expect(code).To(Equal(0), "%s", out)
		Eventually(images).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Equal([]string{"nginx:latest", "nginx:latest", "nginx:latest"}))

		out, code = kruise(ctx, bin, ns, "rollout", "restart", "asts/"+name)
		Expect(code).To(Equal(0), "%s", out)
		Eventually(func() int {
			n := 0
			for _, p := range setPods(ctx, ns, name) {
				if p.Annotations["kubectl.kruise.io/restartedAt"] != "" {
					n++
				}
			}
			return n
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Equal(3), "every pod carries the restart annotation")

		out, code = kruise(ctx, bin, ns, "scale", "--replicas=5", "asts/"+name)
		Expect(code).To(Equal(0), "%s", out)
		waitSet(ctx, ns, name, 5, 5)
	})

	It("migrates a Deployment's pods to a CloneSet, one surge at a time, without a pod lost", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 3)
		s.waitPods(ctx, map[string]int{"v1": 3})
		out, code := kruise(ctx, bin, s.ns, "migrate", "CloneSet", "--from", "Deployment", "--src-name", appName,
			"--dst-name", "app-cs", "--create", "--max-surge", "1", "--timeout-seconds", "120")
		Expect(code).To(Equal(0), "%s", out)

		d, err := kube.AppsV1().Deployments(s.ns).Get(ctx, appName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(*d.Spec.Replicas).To(BeZero())
		cs, err := dyn.Resource(cloneSets).Namespace(s.ns).Get(ctx, "app-cs", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cs.Object["status"]).To(HaveKeyWithValue("availableReplicas", BeNumerically("==", 3)))
		Eventually(func() map[string]int { return s.pods(ctx) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).
			Should(Equal(map[string]int{"v1": 3}), "three Ready pods, all the CloneSet's")
		pods, err := kube.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + appName})
		Expect(err).NotTo(HaveOccurred())
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				Expect(metav1.GetControllerOf(&p).Kind).To(Equal("CloneSet"), "pod %s", p.Name)
			}
		}
	})
})
