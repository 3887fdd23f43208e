package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var persistentPodStates = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "persistentpodstates"}

const hostnameKey = "kubernetes.io/hostname"

var _ = Describe("PersistentPodState stories", func() {
	It("brings a StatefulSet pod that is deleted back to the node it ran on", func(ctx SpecContext) {
		ns := newNamespace(ctx, "podstate-")
		set := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: appName, Namespace: ns, Annotations: map[string]string{
				"kruise.io/auto-generate-persistent-pod-state": "true",
				"kruise.io/required-persistent-topology":       hostnameKey,
			}},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: appLabels()},
				Template: appTemplate(), PodManagementPolicy: appsv1.ParallelPodManagement},
		}
		_, err := kube.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("the generated PersistentPodState records where each ready pod runs")
		var node string
		Eventually(func(g Gomega) {
			state, err := dyn.Resource(persistentPodStates).Namespace(ns).Get(ctx, appName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			recorded := recordedNodes(state)
			g.Expect(recorded).To(HaveLen(2))
			for _, name := range []string{appName + "-0", appName + "-1"} {
				pod, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(recorded).To(HaveKeyWithValue(name, pod.Spec.NodeName))
			}
			node = recorded[appName+"-0"]
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())

		By("deleted, the pod comes back pinned to its node")
		old, err := kube.CoreV1().Pods(ns).Get(ctx, appName+"-0", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(kube.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})).To(Succeed())
		again := waitNewPod(ctx, ns, old.Name, old.UID)
		Expect(again.Spec.NodeSelector).To(HaveKeyWithValue(hostnameKey, node))
		Expect(again.Annotations).To(HaveKeyWithValue("kruise.io/injected-persistent-pod-state", appName))
		Expect(again.Spec.NodeName).To(Equal(node))
	})
})

// recordedNodes reads status.podStates as pod name -> node name.
func recordedNodes(state *unstructured.Unstructured) map[string]string {
	states, _, _ := unstructured.NestedMap(state.Object, "status", "podStates")
	out := map[string]string{}
	for name, s := range states {
		if m, ok := s.(map[string]any); ok {
			out[name], _ = m["nodeName"].(string)
		}
	}
	return out
}

// waitNewPod waits for the pod named name with another UID than old to be scheduled.
func waitNewPod(ctx context.Context, ns, name string, old types.UID) *corev1.Pod {
	GinkgoHelper()
	var pod *corev1.Pod
	Eventually(func(g Gomega) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.UID).NotTo(Equal(old))
		g.Expect(p.Spec.NodeName).NotTo(BeEmpty())
		pod = p
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed(), "pod %s/%s created again and scheduled", ns, name)
	return pod
}
