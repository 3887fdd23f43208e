package realnode

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/images"
	"github.com/flotilla-dev/flotilla/test/registry"
)

var imageListPullJobs = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "imagelistpulljobs"}

// prePullCron pre-pulls an image list onto the real node every minute.
const prePullCron = `apiVersion: apps.kruise.io/v1alpha1
kind: AdvancedCronJob
metadata: {name: prepull}
spec:
  schedule: "* * * * *"
  concurrencyPolicy: Forbid
  template:
    imageListPullJobTemplate:
      metadata: {labels: {purpose: prepull}}
      spec:
        images: [%q]
        selector: {names: [%q]}
        pullPolicy: {backoffLimit: 0, timeoutSeconds: 60}
        completionPolicy: {type: Always}
`

// An AdvancedCronJob whose runs are ImageListPullJobs: the manager's cron creates the job at the minute, the
// ImageListPullJob controller an ImagePullJob per image, and the node's agent pulls it into containerd.
var _ = Describe("An AdvancedCronJob pre-pulling images on a real node", func() {
	It("creates an ImageListPullJob each minute, which pulls its image onto the node", func(ctx SpecContext) {
		reg, err := registry.Start(registry.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(reg.Close)
		img, err := images.Build(images.Spec{Files: []images.File{{Path: "/nightly", Content: []byte("pre-pulled\n"), Mode: 0o644}}})
		Expect(err).NotTo(HaveOccurred())
		digest, err := reg.Push(ctx, "team/nightly:v1", img)
		Expect(err).NotTo(HaveOccurred())
		Expect(node.AllowPlainHTTP(reg.Host)).To(Succeed())
		ns := newNamespace(ctx, "prepull-")
		waitNodeImage(ctx)

		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(fmt.Appendf(nil, prePullCron, reg.Ref("team/nightly:v1"), node.Name), &obj.Object)).To(Succeed())
		_, err = dyn.Resource(advancedCronJobs).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("at the next minute, an ImageListPullJob of the cron's, completed")
		Eventually(func(g Gomega) { g.Expect(finishedPrePulls(ctx, g, ns)).NotTo(BeEmpty()) }).WithContext(ctx).
			WithTimeout(3 * time.Minute).WithPolling(poll).Should(Succeed())
		expectPulled(ctx, reg.Ref("team/nightly:v1"), digest)
		acj, err := dyn.Resource(advancedCronJobs).Namespace(ns).Get(ctx, "prepull", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(acj.Object["status"]).To(HaveKeyWithValue("type", "ImageListPullJob"))
		Expect(acj.Object["status"]).To(HaveKey("lastScheduleTime"))
	})
})

// finishedPrePulls are the names of the namespace's ImageListPullJobs the cron created that completed with
// every image pulled.
func finishedPrePulls(ctx context.Context, g Gomega, ns string) []string {
	list, err := dyn.Resource(imageListPullJobs).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "purpose=prepull"})
	g.Expect(err).NotTo(HaveOccurred())
	var done []string
	for _, j := range list.Items {
		owner := metav1.GetControllerOf(&j)
		g.Expect(owner).NotTo(BeNil(), "ImageListPullJob %s has no controller", j.GetName())
		g.Expect(owner.Kind).To(Equal("AdvancedCronJob"))
		completed, _, _ := unstructured.NestedString(j.Object, "status", "completionTime")
		succeeded, _, _ := unstructured.NestedInt64(j.Object, "status", "succeeded")
		if completed != "" && succeeded == 1 {
			done = append(done, j.GetName())
		}
	}
	return done
}
