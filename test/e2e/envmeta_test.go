package e2e

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/nodeagent/cri/critest"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
)

// colorEnv is the environment of the story's containers: each prints, through `env`, the color its pod
// had when it started.
type colorEnv struct {
	mu      sync.Mutex
	current string
	byID    map[string]string
}

func (e *colorEnv) exec(id string, cmd []string) (cri.ExecResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.byID[id]; !ok {
		e.byID[id] = e.current
	}
	return cri.ExecResult{Stdout: []byte("HOME=/root\nCOLOR=" + e.byID[id] + "\n")}, nil
}

func (e *colorEnv) set(color string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.current = color
}

var _ = Describe("Env from pod metadata", func() {
	It("restarts, in place, the container whose env reads a changed template label", func(ctx SpecContext) {
		tmpl := crrTemplate(nil)
		tmpl.Labels["color"] = "blue"
		tmpl.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['color']"}}}}
		s := &crrStory{ns: newNamespace(ctx, "envmeta-"), ids: map[string]string{}}
		createCRRCloneSet(ctx, s.ns, tmpl)
		s.pod = waitCRRPod(ctx, s.ns)
		env := &colorEnv{current: "blue", byID: map[string]string{}}
		s.runNode(ctx, env.exec)
		old := s.ids["app"]
		By("the node agent reporting the containers")
		Eventually(func() string { return reportedID(ctx, s, "app") }).WithContext(ctx).WithTimeout(crrTimeout).WithPolling(poll).
			Should(Equal("containerd://" + old))

		By("changing the template label in place")
		_, err := dyn.Resource(cloneSets).Namespace(s.ns).Patch(ctx, crrApp, types.MergePatchType,
			[]byte(`{"spec":{"updateStrategy":{"type":"InPlaceIfPossible"},"template":{"metadata":{"labels":{"color":"green"}}}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.waitStopped(ctx, old)).To(Equal([]critest.Stop{{ContainerID: old, GraceSeconds: podGrace}}), "only app restarted")
		Consistently(func() corev1.ConditionStatus { return inPlaceReady(ctx, s) }).WithContext(ctx).WithTimeout(2*time.Second).
			WithPolling(poll).Should(Equal(corev1.ConditionFalse), "the update completes only once app runs again")

		By("the kubelet starting app again with the new value")
		env.set("green")
		restarted := s.restart(ctx, "app")
		Eventually(func() bool {
			p, err := kube.CoreV1().Pods(s.ns).Get(ctx, s.pod.Name, metav1.GetOptions{})
			return err == nil && podReady(*p) && inPlaceReady(ctx, s) == corev1.ConditionTrue
		}).WithContext(ctx).WithTimeout(crrTimeout).WithPolling(poll).Should(BeTrue(), "the pod ready again after its in-place update")
		p, err := kube.CoreV1().Pods(s.ns).Get(ctx, s.pod.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(p.UID).To(Equal(s.pod.UID))
		Expect(p.Labels).To(HaveKeyWithValue("color", "green"))
		Expect(reportedID(ctx, s, "app")).To(Equal("containerd://" + restarted))
		meta, _ := inplaceupdate.RuntimeMeta(p)
		Expect(meta.Containers[0].Hashes.ExtractedEnvFromMetadataHash).To(Equal(inplaceupdate.ExpectedEnvHash(p, &p.Spec.Containers[0])))
		Expect(s.rt.Stops()).To(HaveLen(1), "sidecar, which reads no metadata, kept running")
		// The CloneSet's status follows the pod's Ready, which the wait above saw, in a later reconcile.
		Eventually(func() int64 {
			cs, err := dyn.Resource(cloneSets).Namespace(s.ns).Get(ctx, crrApp, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			updatedReady, _, _ := unstructured.NestedInt64(cs.Object, "status", "updatedReadyReplicas")
			return updatedReady
		}).WithContext(ctx).WithTimeout(crrTimeout).WithPolling(poll).Should(Equal(int64(1)))
	})
})

// reportedID is the container id the node agent's report gives for the pod's container name.
func reportedID(ctx context.Context, s *crrStory, name string) string {
	p, err := kube.CoreV1().Pods(s.ns).Get(ctx, s.pod.Name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	meta, _ := inplaceupdate.RuntimeMeta(p)
	for _, c := range meta.Containers {
		if c.Name == name {
			return c.ContainerID
		}
	}
	return ""
}

func inPlaceReady(ctx context.Context, s *crrStory) corev1.ConditionStatus {
	p, err := kube.CoreV1().Pods(s.ns).Get(ctx, s.pod.Name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == kruiseappspub.InPlaceUpdateReady {
			return c.Status
		}
	}
	return ""
}
