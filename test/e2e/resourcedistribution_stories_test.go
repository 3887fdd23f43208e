package e2e

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var resourceDistributions = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "resourcedistributions"}

// The seed's ResourceDistribution chapter: a ConfigMap copied into the namespaces listed and those a label
// selects, minus the excluded ones; a namespace labelled later gets its copy, an edit of the resource reaches
// every copy, and a same-named ConfigMap nobody distributed is left alone and reported.
var _ = Describe("ResourceDistribution stories", func() {
	It("distributes the seed's ConfigMap to its targets and keeps the copies in sync", func(ctx SpecContext) {
		group := "rd-" + rand.String(6)
		included, selected, excluded := newNamespace(ctx, "rd-included-"), labelledNamespace(ctx, "rd-selected-", group),
			labelledNamespace(ctx, "rd-excluded-", group)
		name := "sample-" + rand.String(5)
		rd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ResourceDistribution", "metadata": map[string]any{"name": name},
			"spec": map[string]any{
				"resource": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "game-demo"},
					"data": map[string]any{"player_initial_lives": "3"}},
				"targets": map[string]any{
					"includedNamespaces":     map[string]any{"list": []any{map[string]any{"name": included}}},
					"namespaceLabelSelector": map[string]any{"matchLabels": map[string]any{"group": group}},
					"excludedNamespaces":     map[string]any{"list": []any{map[string]any{"name": excluded}}},
				},
			},
		}}
		_, err := dyn.Resource(resourceDistributions).Create(ctx, rd, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = dyn.Resource(resourceDistributions).Delete(ctx, name, metav1.DeleteOptions{})
		})

		expectCopy(ctx, included, name, "3")
		expectCopy(ctx, selected, name, "3")
		waitDistribution(ctx, name, 2, 2, 0)
		_, err = kube.CoreV1().ConfigMaps(excluded).Get(ctx, "game-demo", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the excluded namespace got a copy: %v", err)
		rows := kubectlGet(ctx, "", "distributor", name)
		Expect(strings.Fields(rows[0])).To(Equal([]string{"NAME", "TOTAL", "SUCCEED", "FAILED"}))
		// status.failed 0 is left out (upstream's omitempty), so kubectl shows FAILED empty.
		Expect(strings.Fields(rows[1])).To(Equal([]string{name, "2", "2"}))

		By("a namespace labelled later gets its copy; a foreign ConfigMap of the same name is left alone")
		foreign := newNamespace(ctx, "rd-foreign-")
		_, err = kube.CoreV1().ConfigMaps(foreign).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "game-demo"},
			Data: map[string]string{"player_initial_lives": "99"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		late := labelledNamespace(ctx, "rd-late-", group)
		_, err = kube.CoreV1().Namespaces().Patch(ctx, foreign, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"group":"`+group+`"}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		expectCopy(ctx, late, name, "3")
		st := waitDistribution(ctx, name, 4, 3, 1)
		Expect(conditionNamespaces(st, kruiseappsv1alpha1.ResourceDistributionConflictOccurred)).To(Equal([]string{foreign}))
		cm, err := kube.CoreV1().ConfigMaps(foreign).Get(ctx, "game-demo", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cm.Data["player_initial_lives"]).To(Equal("99"))

		By("an edit of the resource reaches every copy")
		_, err = dyn.Resource(resourceDistributions).Patch(ctx, name, types.MergePatchType,
			[]byte(`{"spec":{"resource":{"data":{"player_initial_lives":"5"}}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, ns := range []string{included, selected, late} {
			expectCopy(ctx, ns, name, "5")
		}
	})
})

func labelledNamespace(ctx context.Context, prefix, group string) string {
	GinkgoHelper()
	ns := newNamespace(ctx, prefix)
	_, err := kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(`{"metadata":{"labels":{"group":"`+group+`"}}}`),
		metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
	return ns
}

// expectCopy waits until ns holds the distribution's copy of game-demo with lives, owned and annotated by it.
func expectCopy(ctx context.Context, ns, rd, lives string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "game-demo", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cm.Data).To(HaveKeyWithValue("player_initial_lives", lives))
		g.Expect(cm.Annotations).To(HaveKeyWithValue(kruiseappsv1alpha1.ResourceDistributionSourceAnnotation, rd))
		g.Expect(cm.Annotations).To(HaveKey(kruiseappsv1alpha1.ResourceDistributionHashCodeAnnotation))
		g.Expect(cm.OwnerReferences).To(ContainElement(HaveField("Name", rd)))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed(), "the copy in %s", ns)
}

// waitDistribution waits for the status of the distribution's current generation.
func waitDistribution(ctx context.Context, name string, desired, succeeded, failed int32) kruiseappsv1alpha1.ResourceDistributionStatus {
	GinkgoHelper()
	var st kruiseappsv1alpha1.ResourceDistributionStatus
	Eventually(func(g Gomega) {
		obj, err := dyn.Resource(resourceDistributions).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		rd := &kruiseappsv1alpha1.ResourceDistribution{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, rd)).To(Succeed())
		st = rd.Status
		g.Expect(st.ObservedGeneration).To(Equal(rd.Generation))
		g.Expect([]int32{st.Desired, st.Succeeded, st.Failed}).To(Equal([]int32{desired, succeeded, failed}))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed(), "ResourceDistribution %s status", name)
	return st
}

func conditionNamespaces(st kruiseappsv1alpha1.ResourceDistributionStatus, t kruiseappsv1alpha1.ResourceDistributionConditionType) []string {
	for _, c := range st.Conditions {
		if c.Type == t && c.Status == kruiseappsv1alpha1.ResourceDistributionConditionTrue {
			return c.FailedNamespaces
		}
	}
	return nil
}
