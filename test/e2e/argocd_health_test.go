package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
)

// argoHealthKey is the argocd-cm key of a health override for Kruise Rollouts.
const argoHealthKey = "resource.customizations.health.rollouts.kruise.io_Rollout"

// docsArgoHealth reads the Rollout health override docs/gitops.md marks as tested.
func docsArgoHealth() string {
	GinkgoHelper()
	var cm struct{ Data map[string]string }
	Expect(yaml.Unmarshal([]byte(gitopsSnippet("argocd-rollout-health")), &cm)).To(Succeed())
	Expect(cm.Data).To(HaveKey(argoHealthKey))
	return cm.Data[argoHealthKey]
}

// argoHealth runs the override on a Rollout as Argo CD does (gopher-lua, the object as the global obj) and
// returns "status: message".
func argoHealth(obj map[string]any) string {
	GinkgoHelper()
	var hs struct{ Status, Message string }
	Expect(luavm.New(luavm.Options{}).Eval(context.Background(), docsArgoHealth(), obj, &hs)).To(Succeed())
	return hs.Status + ": " + hs.Message
}

// argoHealthOf is what the override says of the story's Rollout.
func (s *story) argoHealthOf(ctx context.Context) string {
	GinkgoHelper()
	obj, err := dyn.Resource(rolloutsV1beta1).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return argoHealth(obj.Object)
}

// argoRollout is a Rollout of generation 2 with the status given as YAML.
func argoRollout(status string) map[string]any {
	GinkgoHelper()
	obj := map[string]any{}
	Expect(yaml.Unmarshal([]byte("metadata: {generation: 2}\nstatus: "+status), &obj)).To(Succeed())
	return obj
}

var _ = DescribeTable("The Argo CD health override of docs/gitops.md",
	func(status, want string) { Expect(argoHealth(argoRollout(status))).To(Equal(want)) },
	Entry("a batch rolling", `{observedGeneration: 2, phase: Progressing, canaryStatus: {currentStepState: StepUpgrade}}`,
		"Progressing: Rollout is still progressing"),
	Entry("a step waiting for approval", `{observedGeneration: 2, phase: Progressing, canaryStatus: {currentStepState: StepPaused}}`,
		"Suspended: Rollout is Paused need manual intervention"),
	Entry("a blue-green step waiting", `{observedGeneration: 2, phase: Progressing, blueGreenStatus: {currentStepState: StepPaused}}`,
		"Suspended: Rollout is Paused need manual intervention"),
	Entry("done", `{observedGeneration: 2, phase: Healthy, canaryStatus: {currentStepState: Completed}}`,
		"Healthy: Rollout is Completed"),
	Entry("disabled", `{observedGeneration: 2, phase: Disabled, canaryStatus: {currentStepState: StepPaused}}`,
		"Degraded: Rollout is Disabled or Terminating"),
	Entry("stalled", `{observedGeneration: 2, phase: Progressing, canaryStatus: {currentStepState: StepPaused},
		conditions: [{type: Ready, status: "False"}, {type: Stalled, status: "True", message: "release aborted: x"}]}`,
		"Degraded: release aborted: x"),
	Entry("a stall not yet observed at this generation", `{observedGeneration: 1, phase: Progressing,
		conditions: [{type: Stalled, status: "True", message: "old"}]}`, "Progressing: Rollout is still progressing"),
	Entry("no status yet", `null`, "Progressing: Rollout is still progressing"),
)
