package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The deletion protection chapter: a namespace labelled policy.kruise.io/delete-protection=Cascading cannot be
// deleted while a pod runs in it, whether by kubectl or the API, and can once the pod is gone.
var _ = Describe("Deletion protection stories", func() {
	It("keeps a Cascading namespace while a pod runs in it and lets it go once the pod is gone", func(ctx SpecContext) {
		ns := newNamespace(ctx, "protected-")
		protectNamespace(ctx, ns, "Cascading")
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:alpine"}}}}
		_, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			got, err := kube.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed(), "pod %s/web running", ns)

		refusal := "forbidden by ResourcesDeletionProtection: namespace " + ns +
			" has 1 active pod, label policy.kruise.io/delete-protection=Cascading"
		out, err := testCluster.Kubectl(ctx, "delete", "namespace", ns, "--wait=false")
		Expect(err).To(HaveOccurred(), "kubectl deleted the protected namespace: %s", out)
		Expect(string(out)).To(ContainSubstring(refusal))
		err = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "deleting the namespace through the API: %v", err)
		Expect(err.Error()).To(ContainSubstring(refusal))
		got, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Status.Phase).To(Equal(corev1.NamespaceActive))

		By("the pod gone, the namespace goes")
		Expect(kube.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})).To(Succeed())
		Eventually(func() bool {
			_, err := kube.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(goneTimeout).WithPolling(poll).Should(BeTrue(), "pod %s/web gone", ns)
		Expect(kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(goneTimeout).WithPolling(poll).Should(BeTrue(), "namespace %s gone", ns)
	})
})

// protectNamespace labels ns with a delete-protection value; the label goes again before the spec's cleanup
// deletes the namespace.
func protectNamespace(ctx context.Context, ns, protection string) {
	GinkgoHelper()
	_, err := kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"policy.kruise.io/delete-protection":"`+protection+`"}}}`), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		_, err := kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"policy.kruise.io/delete-protection":null}}}`), metav1.PatchOptions{})
		if !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	})
}
