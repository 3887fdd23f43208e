package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Upstream 1.9 serves ImagePullJobs and ImageListPullJobs as v1beta1 too, in v1alpha1's shape: a v1beta1 object
// is the stored v1alpha1 one under another apiVersion, and the webhooks and controllers treat it as one.
var _ = Describe("ImagePullJob and ImageListPullJob v1beta1", func() {
	v1beta1 := func(resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: appsGroup, Version: "v1beta1", Resource: resource}
	}

	It("an ImagePullJob created as v1beta1 is validated and defaulted as v1alpha1 and reads the same in both", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ipj-v1beta1-")
		job := seedObject("037-imagepulljob-job-with-always.yaml")
		job.SetAPIVersion(appsGroup + "/v1beta1")
		_, err := dyn.Resource(v1beta1("imagepulljobs")).Namespace(ns).Create(ctx, job, metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring("spec.selector")), "the seed's names and matchLabels together, refused by the webhook")

		unstructured.RemoveNestedField(job.Object, "spec", "selector", "matchLabels")
		unstructured.RemoveNestedField(job.Object, "spec", "pullPolicy")
		_, err = dyn.Resource(v1beta1("imagepulljobs")).Namespace(ns).Create(ctx, job, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		stored, served := readBothVersions(ctx, ns, "imagepulljobs", job.GetName())
		Expect(stored.Object["spec"]).To(HaveKeyWithValue("pullPolicy", map[string]any{"backoffLimit": int64(3), "timeoutSeconds": int64(600)}),
			"defaulted")
		Expect(kubectlGet(ctx, ns, "imagepulljobs.v1beta1.apps.kruise.io")[0]).To(MatchRegexp(`^NAME\s+TOTAL\s+ACTIVE\s+SUCCEED\s+FAILED\s+AGE$`),
			"v1beta1's table has no MESSAGE column")
		By("the controller completes it: neither named node exists")
		Eventually(func() any {
			_, served = readBothVersions(ctx, ns, "imagepulljobs", job.GetName())
			return served.Object["status"]
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(And(
			HaveKeyWithValue("desired", int64(0)), HaveKeyWithValue("completionTime", Not(BeEmpty()))))
		stored, served = readBothVersions(ctx, ns, "imagepulljobs", job.GetName())
		Expect(served.Object["status"]).To(Equal(stored.Object["status"]))
	})

	It("an ImageListPullJob created as v1beta1 makes an ImagePullJob per image, which reads as v1beta1 too", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ilpj-v1beta1-")
		list := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": appsGroup + "/v1beta1", "kind": "ImageListPullJob",
			"metadata": map[string]any{"name": "images"},
			"spec": map[string]any{
				"images": []any{"nginx:1.9.1", "busybox:1.36"}, "parallelism": "many",
				"selector": map[string]any{"names": []any{"node-1"}}, "completionPolicy": map[string]any{"type": "Never"},
			},
		}}
		_, err := dyn.Resource(v1beta1("imagelistpulljobs")).Namespace(ns).Create(ctx, list, metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring("spec.parallelism")), "refused by the webhook")

		list.Object["spec"].(map[string]any)["parallelism"] = int64(2)
		_, err = dyn.Resource(v1beta1("imagelistpulljobs")).Namespace(ns).Create(ctx, list, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() ([]string, error) {
			jobs, err := dyn.Resource(v1beta1("imagepulljobs")).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var images []string
			for _, j := range jobs.Items {
				image, _, _ := unstructured.NestedString(j.Object, "spec", "image")
				images = append(images, j.GetAPIVersion()+" "+image)
			}
			return images, nil
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(ConsistOf(
			appsGroup+"/v1beta1 nginx:1.9.1", appsGroup+"/v1beta1 busybox:1.36"))
		Eventually(func() any {
			_, served := readBothVersions(ctx, ns, "imagelistpulljobs", "images")
			return served.Object["status"]
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(HaveKeyWithValue("desired", int64(2)))
	})
})

// readBothVersions reads an apps.kruise.io object as v1alpha1 and as v1beta1 and expects the same spec.
func readBothVersions(ctx SpecContext, ns, resource, name string) (stored, served *unstructured.Unstructured) {
	GinkgoHelper()
	stored, err := dyn.Resource(schema.GroupVersionResource{Group: appsGroup, Version: "v1alpha1", Resource: resource}).
		Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	served, err = dyn.Resource(schema.GroupVersionResource{Group: appsGroup, Version: "v1beta1", Resource: resource}).
		Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(served.GetAPIVersion()).To(Equal(appsGroup + "/v1beta1"))
	Expect(served.Object["spec"]).To(Equal(stored.Object["spec"]))
	return stored, served
}
