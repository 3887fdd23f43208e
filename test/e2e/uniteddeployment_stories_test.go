package e2e

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var unitedDeployments = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "uniteddeployments"}

var _ = Describe("UnitedDeployment stories", func() {
	// The suite's three kwok nodes sit in zone-a, zone-b and zone-c.
	It("runs a CloneSet in three zones, rescales, updates one zone through the partitions and drops a zone", func(ctx SpecContext) {
		ns := newNamespace(ctx, "united-")
		createUnitedDeployment(ctx, ns, 6, []any{zoneSubset("zone-a", int64(1)), zoneSubset("zone-b", "50%"), zoneSubset("zone-c", nil)})

		By("each zone runs its share on its own nodes: 1, 50% and the rest")
		waitZones(ctx, ns, map[string]map[string]int{"zone-a": {"v1": 1}, "zone-b": {"v1": 3}, "zone-c": {"v1": 2}})
		waitUnitedStatus(ctx, ns, map[string]any{"readyReplicas": int64(6), "subsetReplicas": map[string]any{
			"zone-a": int64(1), "zone-b": int64(3), "zone-c": int64(2)}})

		By("scaled to 8, zone-b keeps half and zone-c takes the rest")
		unitedPatch(ctx, ns, `{"spec":{"replicas":8}}`)
		waitZones(ctx, ns, map[string]map[string]int{"zone-a": {"v1": 1}, "zone-b": {"v1": 4}, "zone-c": {"v1": 3}})
		current := unitedStatusString(ctx, ns, "currentRevision")

		By("a new version with zone-b and zone-c held by their partitions updates zone-a only")
		unitedPatch(ctx, ns, `{"spec":{"updateStrategy":{"type":"Manual","manualUpdate":{"partitions":{"zone-b":4,"zone-c":3}}},`+
			`"template":{"cloneSetTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"example.com/app:1","env":[{"name":"VERSION","value":"v2"}]}]}}}}}}}`)
		waitZones(ctx, ns, map[string]map[string]int{"zone-a": {"v2": 1}, "zone-b": {"v1": 4}, "zone-c": {"v1": 3}})
		waitUnitedStatus(ctx, ns, map[string]any{"updatedReplicas": int64(1), "updatedReadyReplicas": int64(1), "currentRevision": current})
		Expect(unitedStatusString(ctx, ns, "updateStatus", "updatedRevision")).NotTo(Equal(current))

		By("with the partitions lowered to 0, every zone updates")
		unitedPatch(ctx, ns, `{"spec":{"updateStrategy":{"manualUpdate":{"partitions":{"zone-b":0,"zone-c":0}}}}}`)
		waitZones(ctx, ns, map[string]map[string]int{"zone-a": {"v2": 1}, "zone-b": {"v2": 4}, "zone-c": {"v2": 3}})
		waitUnitedStatus(ctx, ns, map[string]any{"readyReplicas": int64(8), "updatedReadyReplicas": int64(8)})
		Eventually(func() string { return unitedStatusString(ctx, ns, "currentRevision") }).WithContext(ctx).WithTimeout(time.Minute).
			WithPolling(poll).Should(Equal(unitedStatusString(ctx, ns, "updateStatus", "updatedRevision")), "the new revision becomes current")

		By("zone-a taken out of the topology loses its CloneSet, and zone-c takes its pod")
		unitedPatch(ctx, ns, `{"spec":{"topology":{"subsets":[`+mustJSON(zoneSubset("zone-b", "50%"))+`,`+mustJSON(zoneSubset("zone-c", nil))+`]}}}`)
		waitZones(ctx, ns, map[string]map[string]int{"zone-b": {"v2": 4}, "zone-c": {"v2": 4}})
		Eventually(func() []string { return subsetWorkloads(ctx, ns) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).
			Should(ConsistOf("zone-b", "zone-c"))
	})
})

// createUnitedDeployment creates the app as a UnitedDeployment of CloneSets over subsets.
func createUnitedDeployment(ctx context.Context, ns string, replicas int64, subsets []any) {
	GinkgoHelper()
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr.To(appTemplate()))
	Expect(err).NotTo(HaveOccurred())
	selector := map[string]any{"matchLabels": map[string]any{"app": appName}}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
		"metadata": map[string]any{"name": appName, "namespace": ns},
		"spec": map[string]any{
			"replicas": replicas, "selector": selector,
			"template": map[string]any{"cloneSetTemplate": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": appName}},
				"spec":     map[string]any{"selector": selector, "template": tmpl},
			}},
			"topology": map[string]any{"subsets": subsets},
		},
	}}
	_, err = dyn.Resource(unitedDeployments).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// zoneSubset is a subset on the nodes of one zone; replicas nil leaves its count to the others' remainder.
func zoneSubset(zone string, replicas any) map[string]any {
	s := map[string]any{"name": zone, "nodeSelectorTerm": map[string]any{"matchExpressions": []any{map[string]any{
		"key": corev1.LabelTopologyZone, "operator": "In", "values": []any{zone}}}}}
	if replicas != nil {
		s["replicas"] = replicas
	}
	return s
}

func mustJSON(v any) string {
	GinkgoHelper()
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

func unitedPatch(ctx context.Context, ns, patch string) {
	GinkgoHelper()
	_, err := dyn.Resource(unitedDeployments).Namespace(ns).Patch(ctx, appName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// waitZones waits until the app's Ready pods, counted by their node's zone and their VERSION, are want.
func waitZones(ctx context.Context, ns string, want map[string]map[string]int) {
	GinkgoHelper()
	Eventually(func() map[string]map[string]int { return podsByZone(ctx, ns) }).WithContext(ctx).
		WithTimeout(2 * time.Minute).WithPolling(poll).Should(Equal(want))
}

func podsByZone(ctx context.Context, ns string) map[string]map[string]int {
	GinkgoHelper()
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + appName})
	Expect(err).NotTo(HaveOccurred())
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	zoneOf := map[string]string{}
	for _, n := range nodes.Items {
		zoneOf[n.Name] = n.Labels[corev1.LabelTopologyZone]
	}
	out := map[string]map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || !podReady(p) {
			continue
		}
		zone := zoneOf[p.Spec.NodeName]
		if out[zone] == nil {
			out[zone] = map[string]int{}
		}
		out[zone][versionOf(p.Spec.Containers[0])]++
	}
	return out
}

// waitUnitedStatus waits until the UnitedDeployment's status holds want's fields with these values.
func waitUnitedStatus(ctx context.Context, ns string, want map[string]any) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		obj, err := dyn.Resource(unitedDeployments).Namespace(ns).Get(ctx, appName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		status, _, _ := unstructured.NestedMap(obj.Object, "status")
		for field, value := range want {
			g.Expect(status).To(HaveKeyWithValue(field, value))
		}
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
}

// unitedStatusString reads a string field of the UnitedDeployment's status.
func unitedStatusString(ctx context.Context, ns string, path ...string) string {
	GinkgoHelper()
	obj, err := dyn.Resource(unitedDeployments).Namespace(ns).Get(ctx, appName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	v, _, _ := unstructured.NestedString(obj.Object, append([]string{"status"}, path...)...)
	return v
}

// subsetWorkloads names the subsets of the CloneSets the UnitedDeployment owns, from their subset label.
func subsetWorkloads(ctx context.Context, ns string) []string {
	GinkgoHelper()
	list, err := dyn.Resource(cloneSets).Namespace(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, cs := range list.Items {
		if cs.GetDeletionTimestamp() == nil {
			out = append(out, cs.GetLabels()["apps.kruise.io/subset-name"])
		}
	}
	return out
}
