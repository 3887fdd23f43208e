package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/flotilla-dev/flotilla/test/images"
	"github.com/flotilla-dev/flotilla/test/registry"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var nodeImages = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "nodeimages"}

// The node agent, running as the chart's DaemonSet pod on the real node, pulls what the node's NodeImage
// lists into the node's containerd, from a registry the test runs behind basic authentication: with the pull
// secret the NodeImage names, and failing, with the reason, without it and for a tag that does not exist.
var _ = Describe("NodeImage on a real node", func() {
	It("pulls an image through the node's containerd with the pull secret, and says why the others failed", func(ctx SpecContext) {
		reg, err := registry.Start(registry.Options{Username: "puller", Password: "s3cret"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(reg.Close)
		img, err := images.Build(images.Spec{Files: []images.File{{Path: "/hello", Content: []byte("hello\n"), Mode: 0o644}}})
		Expect(err).NotTo(HaveOccurred())
		byDigest, err := reg.Push(ctx, "team/hello:v1", img)
		Expect(err).NotTo(HaveOccurred())
		_, err = reg.Push(ctx, "team/private:v1", img)
		Expect(err).NotTo(HaveOccurred())
		Expect(node.AllowPlainHTTP(reg.Host)).To(Succeed())
		ns := newNamespace(ctx, "nodeimage-")
		createPullSecret(ctx, ns, reg.Host)

		waitNodeImage(ctx)
		once := map[string]any{"backoffLimit": 0, "timeoutSeconds": 60}
		spec := map[string]any{
			reg.Host + "/team/hello": map[string]any{"pullSecrets": []any{map[string]any{"namespace": ns, "name": "registry"}},
				"tags": []any{map[string]any{"tag": "v1", "version": 1}, map[string]any{"tag": "v9", "version": 1, "pullPolicy": once}}},
			reg.Host + "/team/private": map[string]any{"tags": []any{map[string]any{"tag": "v1", "version": 1, "pullPolicy": once}}},
		}
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"images": spec}})
		Expect(err).NotTo(HaveOccurred())
		_, err = dyn.Resource(nodeImages).Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())

		st := waitNodeImageStatus(ctx, 3, 1, 2)
		hello := tagStatus(st, reg.Host+"/team/hello", "v1")
		Expect(hello.Phase).To(Equal(kruiseappsv1alpha1.ImagePhaseSucceeded))
		Expect(hello.ImageID).To(HavePrefix(reg.Host + "/team/hello@sha256:"))
		Expect(tagStatus(st, reg.Host+"/team/hello", "v9").Message).To(ContainSubstring("not found"))
		Expect(tagStatus(st, reg.Host+"/team/private", "v1").Message).To(ContainSubstring("401 Unauthorized"))

		By("the image in the node's containerd, as the registry holds it")
		status := criImageStatus(ctx, reg.Ref("team/hello:v1"))
		Expect(status).NotTo(BeNil(), "containerd does not hold %s", reg.Ref("team/hello:v1"))
		Expect(status.RepoDigests).To(ContainElement(byDigest))
		Expect(criImageStatus(ctx, reg.Ref("team/private:v1"))).To(BeNil(), "pulled without credentials")
	})
})

func createPullSecret(ctx context.Context, ns, host string) {
	GinkgoHelper()
	auths, err := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"username": "puller", "password": "s3cret"}}})
	Expect(err).NotTo(HaveOccurred())
	_, err = kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: auths}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// waitNodeImage waits for the NodeImage the manager creates for the real node once it has been Ready a while.
func waitNodeImage(ctx context.Context) {
	GinkgoHelper()
	Eventually(func() error {
		_, err := dyn.Resource(nodeImages).Get(ctx, node.Name, metav1.GetOptions{})
		return err
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).Should(Succeed(), "the NodeImage of %s", node.Name)
}

func waitNodeImageStatus(ctx context.Context, desired, succeeded, failed int32) kruiseappsv1alpha1.NodeImageStatus {
	GinkgoHelper()
	var st kruiseappsv1alpha1.NodeImageStatus
	Eventually(func(g Gomega) {
		obj, err := dyn.Resource(nodeImages).Get(ctx, node.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		ni := &kruiseappsv1alpha1.NodeImage{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, ni)).To(Succeed())
		st = ni.Status
		g.Expect([]int32{st.Desired, st.Succeeded, st.Failed}).To(Equal([]int32{desired, succeeded, failed}))
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(poll).Should(Succeed(), "NodeImage status: %+v", &st)
	return st
}

func tagStatus(st kruiseappsv1alpha1.NodeImageStatus, image, tag string) kruiseappsv1alpha1.ImageTagStatus {
	GinkgoHelper()
	for _, t := range st.ImageStatuses[image].Tags {
		if t.Tag == tag {
			return t
		}
	}
	Fail(fmt.Sprintf("no status for %s:%s in %+v", image, tag, st.ImageStatuses))
	return kruiseappsv1alpha1.ImageTagStatus{}
}

// criImageStatus asks the node's containerd for an image; nil when it does not hold it.
func criImageStatus(ctx context.Context, ref string) *runtimeapi.Image {
	GinkgoHelper()
	conn, err := grpc.NewClient(node.CRIEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close() }()
	resp, err := runtimeapi.NewImageServiceClient(conn).ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	Expect(err).NotTo(HaveOccurred())
	if resp.Image == nil || !strings.HasPrefix(resp.Image.Id, "sha256:") {
		return nil
	}
	return resp.Image
}
