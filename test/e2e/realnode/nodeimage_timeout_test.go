package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/test/images"
	"github.com/flotilla-dev/flotilla/test/registry"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// The node agent's backoff between attempts of a pull (nodeagent/internal/imagepuller): 1s after the first
// failed attempt, doubling after each.
const agentFirstBackoff = time.Second

// A registry that stops answering: the node's containerd asks it for the image's layer and waits. The node
// agent gives the pull its tag's timeoutSeconds, then gives up, waits its backoff and tries again, and after
// backoffLimit retries fails the tag, saying it timed out. The registry sees each attempt arrive and end:
// containerd drops the request when the agent's deadline passes.
var _ = Describe("NodeImage pull timeout on a real node", func() {
	It("times out a pull the registry stalls, retrying it backoffLimit times spaced by the agent's backoff", func(ctx SpecContext) {
		const timeoutSeconds, backoffLimit = 3, 2
		// The layer is the node's own: no other test's image shares it, so containerd has to fetch it.
		img, err := images.Build(images.Spec{Files: []images.File{{Path: "/stalled",
			Content: fmt.Appendf(nil, "stalled at %d\n", time.Now().UnixNano()), Mode: 0o644}}})
		Expect(err).NotTo(HaveOccurred())
		layers, err := img.Layers()
		Expect(err).NotTo(HaveOccurred())
		layer, err := layers[0].Digest()
		Expect(err).NotTo(HaveOccurred())
		const repo = "team/stalled"
		stalledPath := "/v2/" + repo + "/blobs/" + layer.String()
		reg, err := registry.Start(registry.Options{Stall: func(req *http.Request) bool {
			return req.Method == http.MethodGet && req.URL.Path == stalledPath
		}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(reg.Close)
		_, err = reg.Push(ctx, repo+":v1", img)
		Expect(err).NotTo(HaveOccurred())
		Expect(node.AllowPlainHTTP(reg.Host)).To(Succeed())
		image := reg.Host + "/" + repo

		waitNodeImage(ctx)
		timeoutsBefore := agentPullsCounter(ctx, "Timeout")
		setNodeImageTag(ctx, image, map[string]any{"tag": "v1", "version": 1,
			"pullPolicy": map[string]any{"timeoutSeconds": timeoutSeconds, "backoffLimit": backoffLimit}})
		DeferCleanup(setNodeImageTag, image, map[string]any(nil))

		By("the tag failing, saying it timed out")
		var st kruiseappsv1alpha1.ImageTagStatus
		Eventually(func(g Gomega) {
			st = nodeImageTag(ctx, g, image, "v1")
			g.Expect(st.Phase).To(Equal(kruiseappsv1alpha1.ImagePhaseFailed))
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).Should(Succeed(), "tag status %+v", &st)
		GinkgoWriter.Printf("tag %s:v1 %s: %s\n", image, st.Phase, st.Message)
		Expect(st.Message).To(ContainSubstring("timed out after %ds", timeoutSeconds))
		Expect(criImageStatus(ctx, reg.Ref(repo+":v1"))).To(BeNil(), "containerd holds the image it could not fetch")

		By("the registry seeing backoffLimit+1 attempts, each dropped by containerd, and no more")
		Eventually(func(g Gomega) {
			stalled := reg.Stalled()
			g.Expect(stalled).NotTo(BeEmpty())
			g.Expect(stalled[len(stalled)-1].End.IsZero()).To(BeFalse(), "the last attempt's request still open")
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
		// Longer than the backoff a further attempt would wait (4s).
		Consistently(func() int { return len(reg.Stalled()) }).WithContext(ctx).WithTimeout(6 * time.Second).
			WithPolling(poll).Should(Equal(backoffLimit + 1))
		stalled := reg.Stalled()
		for i, s := range stalled {
			GinkgoWriter.Printf("attempt %d: %s %s from %s to %s (held %v)\n", i+1, s.Method, s.Path,
				s.Start.Format(time.StampMilli), s.End.Format(time.StampMilli), s.End.Sub(s.Start).Round(time.Millisecond))
		}

		By("each attempt held for the timeout, and the next one only after the agent's backoff")
		// The registry sees an attempt arrive a little after the agent starts it (containerd resolves the
		// tag first) and end a little after the agent's deadline: the slack covers that, no more.
		const slack = 500 * time.Millisecond
		backoff := agentFirstBackoff
		for i, s := range stalled {
			Expect(s.End).NotTo(BeZero(), "attempt %d still open", i+1)
			Expect(s.End.Sub(s.Start)).To(BeNumerically(">=", timeoutSeconds*time.Second-slack),
				"attempt %d held shorter than the timeout", i+1)
			if i == 0 {
				continue
			}
			Expect(s.Start.Sub(stalled[i-1].End)).To(BeNumerically(">=", backoff-slack),
				"attempt %d began sooner after attempt %d than the agent's backoff, %v", i+1, i, backoff)
			backoff *= 2
		}

		By("the agent counting one pull failed by its timeout")
		Expect(agentPullsCounter(ctx, "Timeout") - timeoutsBefore).To(Equal(1.0))
	})
})

// setNodeImageTag makes tag the only one of image in the real node's NodeImage; a nil tag takes the image
// out.
func setNodeImageTag(ctx context.Context, image string, tag map[string]any) {
	GinkgoHelper()
	var entry any
	if tag != nil {
		entry = map[string]any{"tags": []any{tag}}
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"images": map[string]any{image: entry}}})
	Expect(err).NotTo(HaveOccurred())
	_, err = dyn.Resource(nodeImages).Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// nodeImageTag is the status of image:tag in the real node's NodeImage now, the zero status before the
// agent wrote one.
func nodeImageTag(ctx context.Context, g Gomega, image, tag string) kruiseappsv1alpha1.ImageTagStatus {
	obj, err := dyn.Resource(nodeImages).Get(ctx, node.Name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	ni := &kruiseappsv1alpha1.NodeImage{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, ni)).To(Succeed())
	for _, t := range ni.Status.ImageStatuses[image].Tags {
		if t.Tag == tag {
			return t
		}
	}
	return kruiseappsv1alpha1.ImageTagStatus{}
}

// agentPullsCounter reads the node agent's flotilla_nodeagent_image_pulls_total for result from its
// /metrics; 0 before it counted any.
func agentPullsCounter(ctx context.Context, result string) float64 {
	GinkgoHelper()
	agent := onlyPod(ctx, flotillaNamespace, "app.kubernetes.io/component=nodeagent")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+agent.Status.PodIP+":"+strconv.Itoa(agentPort)+"/metrics", nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s", body)
	m := regexp.MustCompile(`(?m)^flotilla_nodeagent_image_pulls_total\{result="` + regexp.QuoteMeta(result) + `"\} (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	Expect(err).NotTo(HaveOccurred())
	return v
}
