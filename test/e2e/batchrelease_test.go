package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// A BatchRelease needs no Rollout: a person or a pipeline creates it beside a workload that holds a new
// revision back, and moves spec.releasePlan.batchPartition (or lets every batch run in turn); removing
// batchPartition finalizes the release, as upstream's Rollout does when it ends one.

// batchRelease creates the story's BatchRelease, named after the app, from the YAML of its releasePlan.
// enableExtraWorkloadForCanary is a required field of upstream's schema, so a manifest always carries it.
func (s *story) batchRelease(ctx context.Context, plan string) {
	GinkgoHelper()
	s.createYAML(ctx, fmt.Sprintf("apiVersion: rollouts.kruise.io/v1beta1\nkind: BatchRelease\nmetadata: {name: %s}\nspec:\n  workloadRef: {apiVersion: %s, kind: %s, name: %s}\n  releasePlan:\n    enableExtraWorkloadForCanary: false\n%s",
		appName, s.workloadAPIVersion(), s.kind, appName, indent(plan, 4)))
}

// batchState is the BatchRelease's phase, current batch and batch state.
func (s *story) batchState(ctx context.Context) string {
	br, err := dyn.Resource(batchReleases).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	phase, _, _ := unstructured.NestedString(br.Object, "status", "phase")
	batch, _, _ := unstructured.NestedInt64(br.Object, "status", "canaryStatus", "currentBatch")
	state, _, _ := unstructured.NestedString(br.Object, "status", "canaryStatus", "batchState")
	return fmt.Sprintf("%s %d/%s", phase, batch, state)
}

func (s *story) waitBatch(ctx context.Context, want string) {
	GinkgoHelper()
	Eventually(func() string { return s.batchState(ctx) }).WithContext(ctx).WithTimeout(2*time.Minute).
		WithPolling(poll).Should(Equal(want), s.describe)
}

// setBatchPartition moves the release to a batch (0-based), as a pipeline approving batches does.
func (s *story) setBatchPartition(ctx context.Context, partition int) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"spec":{"releasePlan":{"batchPartition":%d}}}`, partition)
	_, err := dyn.Resource(batchReleases).Namespace(s.ns).Patch(ctx, appName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// holdCloneSet pauses the CloneSet and gives it version in one write, as upstream's BatchRelease users do.
func (s *story) holdCloneSet(ctx context.Context, version string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`[{"op":"add","path":"/spec/updateStrategy/paused","value":true},
{"op":"replace","path":"/spec/template/spec/containers/0/env","value":[{"name":"VERSION","value":%q}]}]`, version)
	_, err := dyn.Resource(cloneSets).Namespace(s.ns).Patch(ctx, appName, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("A BatchRelease without a Rollout", func() {
	It("releases a held CloneSet batch by batch as batchPartition moves, then hands it back", func(ctx SpecContext) {
		s := newStory(ctx, "CloneSet", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		w := watchAppPods(ctx, s.ns)
		s.holdCloneSet(ctx, "v2")
		Consistently(func() map[string]int { return s.pods(ctx) }).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(poll).
			Should(Equal(map[string]int{"v1": 4}), "the paused CloneSet holds the new revision back")

		s.batchRelease(ctx, "batches:\n- canaryReplicas: 1\n- canaryReplicas: 50%\n- canaryReplicas: 100%\nbatchPartition: 0")
		s.waitBatch(ctx, "Progressing 0/Ready")
		s.waitPods(ctx, map[string]int{"v1": 3, "v2": 1})
		Consistently(func() map[string]int { return s.pods(ctx) }).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(poll).
			Should(Equal(map[string]int{"v1": 3, "v2": 1}), "batchPartition 0 holds the release at the first batch")

		s.setBatchPartition(ctx, 1)
		s.waitBatch(ctx, "Progressing 1/Ready")
		s.waitPods(ctx, map[string]int{"v1": 2, "v2": 2})

		s.setBatchPartition(ctx, 2)
		s.waitBatch(ctx, "Progressing 2/Ready")
		s.waitPods(ctx, map[string]int{"v2": 4})

		By("removing batchPartition: the release finalizes and hands the CloneSet back")
		_, err := dyn.Resource(batchReleases).Namespace(s.ns).Patch(ctx, appName, types.MergePatchType,
			[]byte(`{"spec":{"releasePlan":{"batchPartition":null}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return s.batchState(ctx) }).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).
			Should(HavePrefix("Completed "), s.describe)
		s.expectReleased(ctx)
		w.expect(ctx, s.ns, 4, 3)
	})

	It("runs every batch in turn when no batchPartition is set", func(ctx SpecContext) {
		s := newStory(ctx, "CloneSet", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.holdCloneSet(ctx, "v2")
		s.batchRelease(ctx, "batches:\n- canaryReplicas: 1\n- canaryReplicas: 100%")
		s.waitPods(ctx, map[string]int{"v2": 4})
		Eventually(func() string { return s.batchState(ctx) }).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).
			Should(HavePrefix("Completed "), s.describe)
		s.expectReleased(ctx)
	})
})
