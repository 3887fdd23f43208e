package realnode

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

var _ = Describe("CloneSet in-place updates on a real node", func() {
	It("restarts the containers of the same pods with the new image", func(ctx SpecContext) {
		ns := newNamespace(ctx, "inplace-")
		createCloneSet(ctx, ns, 2)
		waitVersions(ctx, ns, map[string]int{"v1": 2})
		before := appPods(ctx, ns)
		ready := watchCondition(ctx, ns, inPlaceUpdateReady)

		setImage(ctx, ns, "v2")
		waitVersions(ctx, ns, map[string]int{"v2": 2})
		expectUpdatedInPlace(before, appPods(ctx, ns))
		for _, p := range before {
			// The pods run v2 before the controller turns the condition back True: wait for that last change.
			Eventually(func() corev1.ConditionStatus {
				h := ready.history(p.Name)
				if len(h) == 0 {
					return ""
				}
				return h[len(h)-1]
			}).WithContext(ctx).WithTimeout(storyTimeout).WithPolling(poll).Should(Equal(corev1.ConditionTrue))
			Expect(ready.history(p.Name)).To(ContainElements(corev1.ConditionFalse, corev1.ConditionTrue),
				"%s went through InPlaceUpdateReady False, then True", p.Name)
		}
	})

	It("moves through a Rollout's steps in place: one pod, approval, then the rest", func(ctx SpecContext) {
		ns := newNamespace(ctx, "rollout-")
		createCloneSet(ctx, ns, 2)
		waitVersions(ctx, ns, map[string]int{"v1": 2})
		createRollout(ctx, ns, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 100%")
		waitStep(ctx, ns, "Healthy")
		before := appPods(ctx, ns)

		setImage(ctx, ns, "v2")
		waitStep(ctx, ns, "Progressing 1/StepPaused")
		waitVersions(ctx, ns, map[string]int{"v1": 1, "v2": 1})
		Consistently(func() map[string]int { return podsByVersion(ctx, ns) }).WithContext(ctx).WithTimeout(3*time.Second).
			WithPolling(poll).Should(Equal(map[string]int{"v1": 1, "v2": 1}), "step 1 holds one pod until approved")
		expectSamePods(before, appPods(ctx, ns))

		approve(ctx, ns)
		waitStep(ctx, ns, "Healthy")
		waitVersions(ctx, ns, map[string]int{"v2": 2})
		expectUpdatedInPlace(before, appPods(ctx, ns))
	})
})

// expectSamePods checks that no pod was replaced: the same names, UIDs and IPs.
func expectSamePods(before, after []corev1.Pod) {
	GinkgoHelper()
	Expect(after).To(HaveLen(len(before)))
	for i := range before {
		Expect(after[i].Name).To(Equal(before[i].Name))
		Expect(after[i].UID).To(Equal(before[i].UID), "pod %s was not recreated", before[i].Name)
		Expect(after[i].Status.PodIP).To(Equal(before[i].Status.PodIP), "pod %s kept its IP", before[i].Name)
	}
}

// expectUpdatedInPlace checks that every pod is the same pod whose app container the kubelet restarted from
// v2: one more restart, a new container and image ID, and the new version answering at the same address.
func expectUpdatedInPlace(before, after []corev1.Pod) {
	GinkgoHelper()
	expectSamePods(before, after)
	for i := range before {
		old, cur := appContainer(before[i]), appContainer(after[i])
		Expect(cur.RestartCount).To(Equal(old.RestartCount+1), "pod %s: restartCount", before[i].Name)
		Expect(cur.ImageID).NotTo(Equal(old.ImageID), "pod %s: imageID", before[i].Name)
		Expect(cur.ContainerID).NotTo(Equal(old.ContainerID), "pod %s: containerID", before[i].Name)
		Expect(answer(after[i], "/")).To(Equal("v2"), "pod %s answers as v2", before[i].Name)
	}
}

// createRollout creates a v1beta1 Rollout of the story's CloneSet with the YAML of its spec.strategy.
func createRollout(ctx context.Context, ns, strategy string) {
	GinkgoHelper()
	doc := fmt.Sprintf(`apiVersion: rollouts.kruise.io/v1beta1
kind: Rollout
metadata: {name: %s, namespace: %s}
spec:
  workloadRef: {apiVersion: apps.kruise.io/v1alpha1, kind: CloneSet, name: %s}
  strategy:
%s`, app, ns, app, indent(strategy, "    "))
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
	_, err := dyn.Resource(rollouts).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

func indent(text, prefix string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		b.WriteString(prefix + strings.TrimRight(line, "\n") + "\n")
	}
	return b.String()
}

// step is the Rollout's phase, with the current step's index and state while it progresses.
func step(ctx context.Context, ns string) string {
	GinkgoHelper()
	obj, err := dyn.Resource(rollouts).Namespace(ns).Get(ctx, app, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	if phase != "Progressing" {
		return phase
	}
	index, _, _ := unstructured.NestedInt64(obj.Object, "status", "canaryStatus", "currentStepIndex")
	state, _, _ := unstructured.NestedString(obj.Object, "status", "canaryStatus", "currentStepState")
	return fmt.Sprintf("%s %d/%s", phase, index, state)
}

func waitStep(ctx context.Context, ns, want string) {
	GinkgoHelper()
	Eventually(func() string { return step(ctx, ns) }).WithContext(ctx).WithTimeout(storyTimeout).WithPolling(poll).
		Should(Equal(want), func() string { return describePods(ctx, ns) })
}

// approve is `kubectl kruise rollout approve`: the status patch that ends a paused step.
func approve(ctx context.Context, ns string) {
	GinkgoHelper()
	_, err := dyn.Resource(rollouts).Namespace(ns).Patch(ctx, app, types.MergePatchType,
		[]byte(`{"status":{"canaryStatus":{"currentStepState":"StepReady"}}}`), metav1.PatchOptions{}, "status")
	Expect(err).NotTo(HaveOccurred())
}
