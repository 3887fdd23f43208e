package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// fluxExprs are the healthCheckExprs docs/gitops.md gives for Rollouts.
type fluxExprs struct {
	Current, Failed, InProgress string
}

// gitopsSnippet is the YAML block docs/gitops.md marks "<!-- tested: name -->".
func gitopsSnippet(name string) string {
	GinkgoHelper()
	root, err := cluster.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	raw, err := os.ReadFile(filepath.Join(root, "docs/gitops.md"))
	Expect(err).NotTo(HaveOccurred())
	_, after, found := strings.Cut(string(raw), "<!-- tested: "+name+" -->")
	Expect(found).To(BeTrue(), "docs/gitops.md lost its tested snippet %s", name)
	_, block, _ := strings.Cut(after, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	return block
}

// docsHealthCheckExprs reads the Kustomization snippet docs/gitops.md marks as tested.
func docsHealthCheckExprs() fluxExprs {
	GinkgoHelper()
	block := gitopsSnippet("healthCheckExprs")
	var kustomization struct {
		Spec struct {
			HealthCheckExprs []struct {
				Kind                        string
				Current, Failed, InProgress string
			} `json:"healthCheckExprs"`
		}
	}
	Expect(yaml.Unmarshal([]byte(dedent(block)), &kustomization)).To(Succeed())
	Expect(kustomization.Spec.HealthCheckExprs).To(HaveLen(1))
	e := kustomization.Spec.HealthCheckExprs[0]
	Expect(e.Kind).To(Equal("Rollout"))
	return fluxExprs{Current: e.Current, Failed: e.Failed, InProgress: e.InProgress}
}

// dedent removes the indentation of a Markdown list item's code block.
func dedent(block string) string {
	lines := strings.Split(block, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return strings.Join(lines, "\n")
}

// fluxStatus evaluates exprs on obj as Flux's kustomize-controller does (RFC 0009): an observedGeneration
// behind the generation is InProgress; then the inProgress, failed and current expressions in that order,
// the first true one deciding; none true is InProgress. The CEL environment is Flux's.
func fluxStatus(obj *unstructured.Unstructured, exprs fluxExprs) kstatus.Status {
	GinkgoHelper()
	observed, ok, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if ok && observed != obj.GetGeneration() {
		return kstatus.InProgressStatus
	}
	for _, e := range []struct {
		expr   string
		status kstatus.Status
	}{{exprs.InProgress, kstatus.InProgressStatus}, {exprs.Failed, kstatus.FailedStatus}, {exprs.Current, kstatus.CurrentStatus}} {
		if e.expr != "" && evalCEL(e.expr, obj.Object) {
			return e.status
		}
	}
	return kstatus.InProgressStatus
}

func evalCEL(expr string, vars map[string]any) bool {
	GinkgoHelper()
	env, err := cel.NewEnv(cel.HomogeneousAggregateLiterals(), cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true), cel.CrossTypeNumericComparisons(true), cel.OptionalTypes(),
		ext.Strings(), ext.Sets(), ext.Encoders())
	Expect(err).NotTo(HaveOccurred())
	ast, issues := env.Parse(expr)
	Expect(issues.Err()).NotTo(HaveOccurred(), expr)
	prog, err := env.Program(ast)
	Expect(err).NotTo(HaveOccurred())
	val, _, err := prog.Eval(vars)
	Expect(err).NotTo(HaveOccurred(), expr)
	b, ok := val.(types.Bool)
	Expect(ok).To(BeTrue(), "%s is not a boolean: %v", expr, val)
	return bool(b)
}

// gitopsView is what kstatus and the documented expressions make of a Rollout.
func gitopsView(ctx context.Context, ns, name string, exprs fluxExprs) string {
	GinkgoHelper()
	obj, err := dyn.Resource(rolloutsV1beta1).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	res, err := kstatus.Compute(obj)
	Expect(err).NotTo(HaveOccurred())
	return fmt.Sprintf("kstatus %s, with the snippet %s", res.Status, fluxStatus(obj, exprs))
}

var _ = Describe("Flux and Helm --wait", func() {
	It("see each phase as docs/gitops.md says, with and without its healthCheckExprs", func(ctx SpecContext) {
		exprs := docsHealthCheckExprs()
		view := func(s *story) string { return gitopsView(ctx, s.ns, appName, exprs) }
		s := newStory(ctx, "Deployment", 2)
		s.waitPods(ctx, map[string]int{"v1": 2})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 100%")
		Expect(view(s)).To(Equal("kstatus Current, with the snippet Current"), "settled")

		By("a batch rolling")
		s.setGatedVersion(ctx, "v2")
		Eventually(func() int { return len(s.podsOf(ctx, "v2")) }).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(1))
		s.waitStep(ctx, "Progressing 1/StepUpgrade")
		Expect(view(s)).To(Equal("kstatus InProgress, with the snippet InProgress"), "rolling")

		By("waiting for approval")
		s.warm(ctx, s.podsOf(ctx, "v2")...)
		s.waitStep(ctx, "Progressing 1/StepPaused")
		Eventually(func() string { return view(s) }).WithContext(ctx).WithTimeout(10*time.Second).WithPolling(poll).
			Should(Equal("kstatus InProgress, with the snippet Current"), "awaiting approval")

		By("paused by a person")
		s.specPatch(ctx, `{"spec":{"strategy":{"paused":true}}}`)
		Eventually(func() string { return view(s) }).WithContext(ctx).WithTimeout(10*time.Second).WithPolling(poll).
			Should(Equal("kstatus InProgress, with the snippet Current"), "paused")
		s.specPatch(ctx, `{"spec":{"strategy":{"paused":false}}}`)

		By("the release done")
		s.approve(ctx)
		Eventually(func() any {
			s.warm(ctx, s.podsOf(ctx, "v2")...) // the new pods wait on the gate the story's version carries
			return s.status(ctx)["phase"]
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Equal("Healthy"))
		Eventually(func() string { return view(s) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).
			Should(Equal("kstatus Current, with the snippet Current"), "done")

		By("something wrong: the workload is gone")
		Expect(kube.AppsV1().Deployments(s.ns).Delete(ctx, appName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() string { return view(s) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).
			Should(Equal("kstatus Failed, with the snippet Failed"), "stalled")
	})
})
