package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// The UnitedDeployment story runs on a pool of three kwok nodes of its own, one per zone (cluster.KwokNode
// spreads consecutive indexes over zone-a, zone-b and zone-c), labelled and tainted so that only the story's
// pods run there.
const (
	udPoolLabel = "e2e.flotilla.dev/ud-pool"
	udPoolNodes = 3
	udName      = "web"
)

var unitedDeployments = kruiseappsv1alpha1.GroupVersion.WithResource("uniteddeployments")

func udPoolNodeName(i int) string { return fmt.Sprintf("ud-pool-%d", i) }

func addUDPoolNode(ctx context.Context, i int) {
	GinkgoHelper()
	node := cluster.KwokNode(udPoolNodeName(i), 300+i, 0)
	node.Labels[udPoolLabel] = "true"
	node.Spec.Taints = []corev1.Taint{{Key: udPoolLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	_, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() bool {
		n, err := kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		return err == nil && nodeIsReady(n)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue(), "node %s Ready", node.Name)
}

// newZonedUD is a UnitedDeployment of replicas CloneSet pods over the pool's three zones.
func newZonedUD(ns string, replicas int32) *unstructured.Unstructured {
	GinkgoHelper()
	ud := &kruiseappsv1alpha1.UnitedDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "UnitedDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: udName, Namespace: ns},
	}
	ud.Spec.Replicas = ptr.To(replicas)
	ud.Spec.Selector = &metav1.LabelSelector{MatchLabels: appLabels()}
	tmpl := appTemplate()
	tmpl.Spec.NodeSelector = map[string]string{udPoolLabel: "true"}
	tmpl.Spec.Tolerations = []corev1.Toleration{{Key: udPoolLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	ud.Spec.Template.CloneSetTemplate = &kruiseappsv1alpha1.CloneSetTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: appLabels()}}
	ud.Spec.Template.CloneSetTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: appLabels()}
	ud.Spec.Template.CloneSetTemplate.Spec.Template = tmpl
	for _, zone := range []string{"zone-a", "zone-b", "zone-c"} {
		ud.Spec.Topology.Subsets = append(ud.Spec.Topology.Subsets, kruiseappsv1alpha1.Subset{Name: zone,
			NodeSelectorTerm: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}},
			}}})
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ud)
	Expect(err).NotTo(HaveOccurred())
	return &unstructured.Unstructured{Object: raw}
}

func readUD(ctx context.Context, ns string) (*kruiseappsv1alpha1.UnitedDeployment, error) {
	obj, err := dyn.Resource(unitedDeployments).Namespace(ns).Get(ctx, udName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	ud := &kruiseappsv1alpha1.UnitedDeployment{}
	return ud, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, ud)
}

// changeUD applies change to the UnitedDeployment's spec (as a map), retrying on conflicts.
func changeUD(ctx context.Context, ns string, change func(spec map[string]any)) {
	GinkgoHelper()
	Eventually(func() error {
		obj, err := dyn.Resource(unitedDeployments).Namespace(ns).Get(ctx, udName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(obj.Object["spec"].(map[string]any))
		_, err = dyn.Resource(unitedDeployments).Namespace(ns).Update(ctx, obj, metav1.UpdateOptions{})
		return err
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
}

// expectPodsInTheirZones checks every pod of the namespace runs on a node of its subset's zone.
func expectPodsInTheirZones(ctx context.Context, ns string, want int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).To(HaveLen(want))
		for _, p := range pods.Items {
			g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s scheduled", p.Name)
			node, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(node.Labels[corev1.LabelTopologyZone]).To(Equal(p.Labels[kruiseappsv1alpha1.SubSetNameLabelKey]), "pod %s", p.Name)
		}
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Succeed())
}

var _ = Describe("UnitedDeployment stories", Serial, Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		DeferCleanup(func(ctx SpecContext) {
			for i := range udPoolNodes {
				err := kube.CoreV1().Nodes().Delete(ctx, udPoolNodeName(i), metav1.DeleteOptions{})
				if !apierrors.IsNotFound(err) {
					Expect(err).NotTo(HaveOccurred())
				}
			}
		})
		for i := range udPoolNodes {
			addUDPoolNode(ctx, i)
		}
	})

	It("runs a UnitedDeployment across three zones, scales it and rolls a new version out zone by zone", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ud-zones-")
		_, err := dyn.Resource(unitedDeployments).Namespace(ns).Create(ctx, newZonedUD(ns, 6), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("two ready pods in each zone")
		Eventually(func(g Gomega) {
			ud, err := readUD(ctx, ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ud.Status.ReadyReplicas).To(BeEquivalentTo(6))
			g.Expect(ud.Status.SubsetReplicas).To(Equal(map[string]int32{"zone-a": 2, "zone-b": 2, "zone-c": 2}))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Succeed())
		expectPodsInTheirZones(ctx, ns, 6)

		By("scaled to nine, three in each zone")
		changeUD(ctx, ns, func(spec map[string]any) { spec["replicas"] = int64(9) })
		Eventually(func(g Gomega) {
			ud, err := readUD(ctx, ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ud.Status.ReadyReplicas).To(BeEquivalentTo(9))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Succeed())
		expectPodsInTheirZones(ctx, ns, 9)
		before, err := readUD(ctx, ns)
		Expect(err).NotTo(HaveOccurred())

		By("a new version held by partitions: none in zone-a, two in zone-b, all three in zone-c")
		changeUD(ctx, ns, func(spec map[string]any) {
			tmpl := spec["template"].(map[string]any)["cloneSetTemplate"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)
			tmpl["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"] = "example.com/app:2"
			spec["updateStrategy"] = map[string]any{"type": "Manual", "manualUpdate": map[string]any{"partitions": map[string]any{"zone-a": int64(3), "zone-b": int64(1)}}}
		})
		Eventually(func(g Gomega) {
			ud, err := readUD(ctx, ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ud.Status.UpdateStatus.UpdatedRevision).NotTo(Equal(before.Status.CurrentRevision))
			g.Expect(ud.Status.UpdatedReadyReplicas).To(BeEquivalentTo(5))
			g.Expect(ud.Status.CurrentRevision).To(Equal(before.Status.CurrentRevision))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Succeed())

		By("the partitions released, every pod runs the new version and it becomes current")
		changeUD(ctx, ns, func(spec map[string]any) {
			spec["updateStrategy"] = map[string]any{"type": "Manual", "manualUpdate": map[string]any{}}
		})
		Eventually(func(g Gomega) {
			ud, err := readUD(ctx, ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ud.Status.UpdatedReadyReplicas).To(BeEquivalentTo(9))
			g.Expect(ud.Status.CurrentRevision).To(Equal(ud.Status.UpdateStatus.UpdatedRevision))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Succeed())
	})
})
