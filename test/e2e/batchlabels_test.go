package e2e

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	rolloutIDLabel = "rollouts.kruise.io/rollout-id"
	batchIDLabel   = "rollouts.kruise.io/rollout-batch-id"
)

var _ = Describe("Batch labels", func() {
	DescribeTable("label each pod of the new revision with the rollout-id and the batch that brought it",
		func(ctx SpecContext, kind string) {
			s := newStory(ctx, kind, 4)
			s.waitPods(ctx, map[string]int{"v1": 4})
			s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 50%\n  - replicas: 100%")
			s.setVersionWithRolloutID(ctx, "v2")
			// A batch is ready only once its pods carry the labels, so each pause already shows them.
			for step, want := range []map[string]int{{"1": 1}, {"1": 1, "2": 1}} {
				s.waitStep(ctx, fmt.Sprintf("Progressing %d/StepPaused", step+1))
				Expect(s.batchesOf(ctx, "v2")).To(Equal(want))
				old := s.podsOf(ctx, "v1")
				Expect(old).NotTo(BeEmpty())
				for _, p := range old {
					Expect(p.Labels).NotTo(HaveKey(rolloutIDLabel), "pod %s of the old revision", p.Name)
				}
				s.approve(ctx)
			}
			s.waitPhase(ctx, "Healthy")
			s.waitPods(ctx, map[string]int{"v2": 4})
			Expect(s.batchesOf(ctx, "v2")).To(Equal(map[string]int{"1": 1, "2": 1, "3": 2}))
			if kind == "Deployment" {
				s.expectOwnReplicaSetsOnly(ctx)
			}
		},
		Entry("Deployment", "Deployment"),
		Entry("CloneSet", "CloneSet"),
	)
})

// setVersionWithRolloutID changes the template and sets the rollout-id annotation in one write.
func (s *story) setVersionWithRolloutID(ctx SpecContext, version string) {
	GinkgoHelper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}},"spec":{"template":{"spec":{"containers":[`+
		`{"name":"app","image":"example.com/app:1","env":[{"name":"VERSION","value":%q}]}]}}}}`, rolloutIDLabel, version, version))
	var err error
	if s.kind == "CloneSet" {
		_, err = dyn.Resource(cloneSets).Namespace(s.ns).Patch(ctx, appName, types.MergePatchType, patch, metav1.PatchOptions{})
	} else {
		_, err = kube.AppsV1().Deployments(s.ns).Patch(ctx, appName, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	Expect(err).NotTo(HaveOccurred())
}

// batchesOf counts the live pods of a version by their batch label; every one must carry the rollout-id v2.
func (s *story) batchesOf(ctx SpecContext, version string) map[string]int {
	GinkgoHelper()
	out := map[string]int{}
	for _, p := range s.podsOf(ctx, version) {
		Expect(p.Labels).To(HaveKeyWithValue(rolloutIDLabel, "v2"), "pod %s", p.Name)
		out[p.Labels[batchIDLabel]]++
	}
	return out
}

// expectOwnReplicaSetsOnly checks that kube-controller-manager took the released Deployment back with the
// release's new ReplicaSet: no hash collision, one ReplicaSet per revision, and no batch labels left on their
// templates (the Advanced Deployment controller stamps them there while a ReplicaSet creates a batch's pods).
func (s *story) expectOwnReplicaSetsOnly(ctx SpecContext) {
	GinkgoHelper()
	d, err := kube.AppsV1().Deployments(s.ns).Get(ctx, appName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(d.Status.CollisionCount).To(BeNil())
	sets, err := kube.AppsV1().ReplicaSets(s.ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(sets.Items).To(HaveLen(2))
	for _, rs := range sets.Items {
		Expect(rs.Spec.Template.Labels).NotTo(HaveKey(rolloutIDLabel), "template of replica set %s", rs.Name)
		Expect(rs.Spec.Template.Labels).NotTo(HaveKey(batchIDLabel), "template of replica set %s", rs.Name)
	}
}
