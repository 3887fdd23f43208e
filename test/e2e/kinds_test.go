package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var unitedDeployments = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "uniteddeployments"}

// warningsAbout are the notes of the Warning events of a reason about one object.
func warningsAbout(ctx context.Context, ns string, uid types.UID, reason string) []string {
	GinkgoHelper()
	list, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.UID == uid && e.Reason == reason && e.Type == "Warning" {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

var _ = Describe("Kinds nothing reconciles", func() {
	It("gives each object of such a kind a Warning event, and none to the kinds a module reconciles", func(ctx SpecContext) {
		ns := newNamespace(ctx, "unreconciled-")
		united := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
			"metadata": map[string]any{"name": "united", "namespace": ns},
			"spec": map[string]any{
				"selector": map[string]any{"matchLabels": map[string]any{"app": "united"}},
			},
		}}
		created, err := dyn.Resource(unitedDeployments).Namespace(ns).Create(ctx, united, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() []string { return warningsAbout(ctx, ns, created.GetUID(), "NoController") }).WithContext(ctx).
			WithTimeout(30 * time.Second).WithPolling(poll).Should(ConsistOf(
			"no controller for apps.kruise.io/UnitedDeployment in this installation: the object is accepted and nothing acts on it"))

		Expect(createCloneSet(ctx, ns, 1)).To(Succeed())
		cs, err := dyn.Resource(cloneSets).Namespace(ns).Get(ctx, appName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Consistently(func() []string { return warningsAbout(ctx, ns, cs.GetUID(), "NoController") }).WithContext(ctx).
			WithTimeout(3 * time.Second).WithPolling(poll).Should(BeEmpty())
	})
})
