package e2e

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

var workloadSpreads = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "workloadspreads"}

var _ = Describe("WorkloadSpread stories", func() {
	It("places 2 pods per zone, the rest in the last zone, and scales down the last zone first", func(ctx SpecContext) {
		ns := newNamespace(ctx, "spread-")
		createSpread(ctx, ns)
		waitPodsRoutedToTheWebhook(ctx)

		By("a Deployment of 5 gets 2 pods in zone-a, 2 in zone-b and 1 in zone-c")
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: appName, Namespace: ns},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](5), Selector: &metav1.LabelSelector{MatchLabels: appLabels()},
				Template: appTemplate()}}
		_, err := kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			g.Expect(podsPerZone(ctx, g, ns)).To(Equal(map[string]int{"zone-a": 2, "zone-b": 2, "zone-c": 1}))
			g.Expect(deletionCosts(ctx, g, ns)).To(Equal(map[string]int{"300": 2, "200": 2, "100": 1}))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Succeed())

		By("scaled to 4, the Deployment deletes zone-c's pod, whose deletion cost is the lowest")
		_, err = kube.AppsV1().Deployments(ns).Patch(ctx, appName, "application/merge-patch+json",
			[]byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			g.Expect(podsPerZone(ctx, g, ns)).To(Equal(map[string]int{"zone-a": 2, "zone-b": 2}))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
	})
})

// createSpread creates the WorkloadSpread of the app's Deployment over the kwok nodes' zones and waits until
// its status describes its spec.
func createSpread(ctx context.Context, ns string) {
	GinkgoHelper()
	subset := func(zone string, max any) map[string]any {
		s := map[string]any{"name": zone, "requiredNodeSelectorTerm": map[string]any{"matchExpressions": []any{
			map[string]any{"key": corev1.LabelTopologyZone, "operator": "In", "values": []any{zone}}}}}
		if max != nil {
			s["maxReplicas"] = max
		}
		return s
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
		"metadata": map[string]any{"name": appName, "namespace": ns},
		"spec": map[string]any{
			"targetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": appName},
			"subsets":   []any{subset("zone-a", int64(2)), subset("zone-b", int64(2)), subset("zone-c", nil)},
		},
	}}
	_, err := dyn.Resource(workloadSpreads).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		got, err := dyn.Resource(workloadSpreads).Namespace(ns).Get(ctx, appName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		observed, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
		subsets, _, _ := unstructured.NestedSlice(got.Object, "status", "subsetStatuses")
		g.Expect(observed).To(Equal(got.GetGeneration()))
		g.Expect(subsets).To(HaveLen(3))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
}

// waitPodsRoutedToTheWebhook waits until the pod webhook takes ReplicaSet pods, which it does while a
// WorkloadSpread exists.
func waitPodsRoutedToTheWebhook(ctx context.Context) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		list, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		routed := false
		for _, cfg := range list.Items {
			for _, w := range cfg.Webhooks {
				if w.Name == "mpod.kb.io" && len(w.MatchConditions) > 0 && strings.Contains(w.MatchConditions[0].Expression, "'ReplicaSet'") {
					routed = true
				}
			}
		}
		g.Expect(routed).To(BeTrue())
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
}

// podsPerZone counts the namespace's active, scheduled pods by their node's zone.
func podsPerZone(ctx context.Context, g Gomega, ns string) map[string]int {
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]int{}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil {
			continue
		}
		g.Expect(pod.Spec.NodeName).NotTo(BeEmpty(), "pod %s scheduled", pod.Name)
		node, err := kube.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		out[node.Labels[corev1.LabelTopologyZone]]++
	}
	return out
}

// deletionCosts counts the namespace's active pods by their pod-deletion-cost annotation ("" for none).
func deletionCosts(ctx context.Context, g Gomega, ns string) map[string]int {
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]int{}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil {
			out[pod.Annotations["controller.kubernetes.io/pod-deletion-cost"]]++
		}
	}
	return out
}
