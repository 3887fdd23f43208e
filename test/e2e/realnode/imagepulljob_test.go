package realnode

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-dev/flotilla/test/images"
	"github.com/flotilla-dev/flotilla/test/registry"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var imagePullJobs = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "imagepulljobs"}

// ImagePullJobs naming the real node: the manager writes each job's tag into the node's NodeImage, the node
// agent pod pulls it into the node's containerd from registries the test runs, and the job reports the result
// the agent wrote. A private image without a pull secret fails with the registry's answer; with the secret,
// which the manager copies into its namespace for the agent, it is pulled. Each job takes its tag and its
// secret's copy back once it has finished.
var _ = Describe("ImagePullJob on a real node", func() {
	It("pulls an image onto the node, a private one with its pull secret, and says why one without fails", func(ctx SpecContext) {
		public, err := registry.Start(registry.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(public.Close)
		private, err := registry.Start(registry.Options{Username: "puller", Password: "s3cret"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(private.Close)
		img, err := images.Build(images.Spec{Files: []images.File{{Path: "/job", Content: []byte("pulled by a job\n"), Mode: 0o644}}})
		Expect(err).NotTo(HaveOccurred())
		publicDigest, err := public.Push(ctx, "team/job:v1", img)
		Expect(err).NotTo(HaveOccurred())
		privateDigest, err := private.Push(ctx, "team/job-private:v1", img)
		Expect(err).NotTo(HaveOccurred())
		Expect(node.AllowPlainHTTP(public.Host)).To(Succeed())
		Expect(node.AllowPlainHTTP(private.Host)).To(Succeed())
		ns := newNamespace(ctx, "imagepulljob-")
		createPullSecret(ctx, ns, private.Host)
		waitNodeImage(ctx)

		By("a public image, pulled onto the real node")
		st := runImagePullJob(ctx, ns, "public", public.Ref("team/job:v1"), nil)
		Expect([]int32{st.Desired, st.Succeeded, st.Failed}).To(Equal([]int32{1, 1, 0}), "status %+v", st)
		Expect(st.Message).To(Equal("job has completed"))
		expectPulled(ctx, public.Ref("team/job:v1"), publicDigest)
		// kubectl lists the group's preferred version, v1beta1, whose table has no MESSAGE (as upstream 1.9's).
		out, err := testCluster.Kubectl(ctx, "get", "imagepulljobs", "-n", ns)
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(strings.Fields(strings.SplitN(string(out), "\n", 2)[0])).To(Equal([]string{"NAME", "TOTAL", "ACTIVE", "SUCCEED", "FAILED", "AGE"}))
		Expect(string(out)).To(MatchRegexp(`public\s+1\s+0\s+1\s+0\s+\S+\n`))
		out, err = testCluster.Kubectl(ctx, "get", "imagepulljobs.v1alpha1.apps.kruise.io", "-n", ns)
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(strings.Fields(strings.SplitN(string(out), "\n", 2)[0])).To(Equal([]string{"NAME", "TOTAL", "ACTIVE", "SUCCEED", "FAILED", "AGE", "MESSAGE"}))
		Expect(string(out)).To(MatchRegexp(`public\s+1\s+0\s+1\s+0\s+\S+\s+job has completed`))

		By("a private image without its pull secret: failed, with the registry's answer")
		st = runImagePullJob(ctx, ns, "no-secret", private.Ref("team/job-private:v1"), nil)
		Expect([]int32{st.Desired, st.Succeeded, st.Failed}).To(Equal([]int32{1, 0, 1}), "status %+v", st)
		Expect(st.FailedNodes).To(Equal([]string{node.Name}))
		Expect(st.Message).To(ContainSubstring(node.Name + ": "))
		Expect(st.Message).To(ContainSubstring("401 Unauthorized"))
		Expect(criImageStatus(ctx, private.Ref("team/job-private:v1"))).To(BeNil(), "pulled without credentials")

		By("the same image with the pull secret: pulled")
		st = runImagePullJob(ctx, ns, "with-secret", private.Ref("team/job-private:v1"), []string{"registry"})
		Expect([]int32{st.Desired, st.Succeeded, st.Failed}).To(Equal([]int32{1, 1, 0}), "status %+v", st)
		expectPulled(ctx, private.Ref("team/job-private:v1"), privateDigest)

		By("the finished jobs' tags and the secret's copy taken back")
		Eventually(func(g Gomega) {
			ni, err := dyn.Resource(nodeImages).Get(ctx, node.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			images, _, _ := unstructured.NestedMap(ni.Object, "spec", "images")
			g.Expect(images).NotTo(HaveKey(public.Host+"/team/job"), "public image tag left")
			g.Expect(images).NotTo(HaveKey(private.Host+"/team/job-private"), "private image tag left")
			copies, err := kube.CoreV1().Secrets(flotillaNamespace).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			for _, s := range copies.Items {
				g.Expect(s.Annotations[kruiseappsv1alpha1.ImagePullJobSecretSourceKeyAnnotation]).NotTo(Equal(ns+"/registry"), "copy %s left", s.Name)
			}
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
	})
})

// runImagePullJob creates an ImagePullJob of image on the real node (one attempt of at most a minute) and
// returns its status once it has completed.
func runImagePullJob(ctx context.Context, ns, name, image string, secrets []string) kruiseappsv1alpha1.ImagePullJobStatus {
	GinkgoHelper()
	spec := map[string]any{"image": image, "selector": map[string]any{"names": []any{node.Name}},
		"pullPolicy": map[string]any{"backoffLimit": int64(0), "timeoutSeconds": int64(60)}, "completionPolicy": map[string]any{"type": "Always"}}
	if len(secrets) > 0 {
		var s []any
		for _, name := range secrets {
			s = append(s, name)
		}
		spec["pullSecrets"] = s
	}
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ImagePullJob",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
	_, err := dyn.Resource(imagePullJobs).Namespace(ns).Create(ctx, job, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	var st kruiseappsv1alpha1.ImagePullJobStatus
	Eventually(func(g Gomega) {
		obj, err := dyn.Resource(imagePullJobs).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		job := &kruiseappsv1alpha1.ImagePullJob{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, job)).To(Succeed())
		st = job.Status
		g.Expect(st.CompletionTime).NotTo(BeNil())
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(poll).Should(Succeed(), "ImagePullJob %s: %+v", name, &st)
	return st
}

// expectPulled checks the node's containerd holds ref with the digest the registry holds it by.
func expectPulled(ctx context.Context, ref, byDigest string) {
	GinkgoHelper()
	status := criImageStatus(ctx, ref)
	Expect(status).NotTo(BeNil(), "containerd does not hold %s", ref)
	Expect(status.RepoDigests).To(ContainElement(byDigest))
}
