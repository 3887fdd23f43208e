package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// The Advanced DaemonSet stories run on a pool of their own kwok nodes, labelled and tainted so that only the
// stories' DaemonSets (which select and tolerate them) run there and the other specs never see them.
const (
	poolLabel = "e2e.flotilla.dev/ads-pool"
	poolNodes = 6
	// adsName is the seed's DaemonSet, nginx; its pods are labelled app=nginx.
	adsName = "nginx"
)

func poolNodeName(i int) string { return fmt.Sprintf("ads-pool-%d", i) }

// addPoolNode creates kwok node i of the pool and waits until it is Ready; the stories' cleanup removes it.
func addPoolNode(ctx context.Context, i int) {
	GinkgoHelper()
	node := cluster.KwokNode(poolNodeName(i), 100+i, 0)
	node.Labels[poolLabel] = "true"
	node.Spec.Taints = []corev1.Taint{{Key: poolLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	_, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() bool {
		n, err := kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		return err == nil && nodeIsReady(n)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue(), "node %s Ready", node.Name)
}

func removePoolNode(ctx context.Context, i int) {
	err := kube.CoreV1().Nodes().Delete(ctx, poolNodeName(i), metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

func nodeIsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// applyPoolDaemonSet creates a seed DaemonSet in ns, placed on the pool's nodes, after change.
func applyPoolDaemonSet(ctx context.Context, file, ns string, change func(obj *unstructured.Unstructured)) {
	GinkgoHelper()
	applyPoolDaemonSetAs(ctx, advancedDaemonSets, file, ns, change)
}

// applyPoolDaemonSetAs is applyPoolDaemonSet in the API version of gvr.
func applyPoolDaemonSetAs(ctx context.Context, gvr schema.GroupVersionResource, file, ns string, change func(obj *unstructured.Unstructured)) {
	GinkgoHelper()
	obj := seedObject(file)
	obj.SetAPIVersion(gvr.GroupVersion().String())
	obj.SetNamespace(ns)
	spec := obj.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	spec["nodeSelector"] = map[string]any{poolLabel: "true"}
	spec["tolerations"] = []any{map[string]any{"key": poolLabel, "operator": "Exists", "effect": "NoSchedule"}}
	if change != nil {
		change(obj)
	}
	_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

func readADS(ctx context.Context, ns string) *kruiseappsv1alpha1.DaemonSet {
	GinkgoHelper()
	obj, err := dyn.Resource(advancedDaemonSets).Namespace(ns).Get(ctx, adsName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	ds := &kruiseappsv1alpha1.DaemonSet{}
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, ds)).To(Succeed())
	return ds
}

// waitADS waits until the DaemonSet at its current generation runs a pod on each of the pool's 6 nodes, all
// available, updated of them on the current template.
func waitADS(ctx context.Context, ns string, updated int32) kruiseappsv1alpha1.DaemonSetStatus {
	const desired = poolNodes
	GinkgoHelper()
	var st kruiseappsv1alpha1.DaemonSetStatus
	Eventually(func() bool {
		ds := readADS(ctx, ns)
		st = ds.Status
		return st.ObservedGeneration == ds.Generation && st.DesiredNumberScheduled == desired &&
			st.CurrentNumberScheduled == desired && st.NumberAvailable == desired && st.UpdatedNumberScheduled == updated &&
			st.NumberMisscheduled == 0 && len(adsPods(ctx, ns)) == int(desired)
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).Should(BeTrue(), func() string {
		return fmt.Sprintf("DaemonSet %s/%s: %+v\n%s", ns, adsName, &st, describePool(ns))
	})
	return st
}

// describePool is what a failed wait shows: each pool node's readiness and taints, and every pod of the
// DaemonSet with its revision, lifecycle state, conditions and deletion.
func describePool(ns string) string {
	// Its own context: the spec's may be what ended the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	if nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: poolLabel + "=true"}); err == nil {
		for _, n := range nodes.Items {
			fmt.Fprintf(&b, "node %s: conditions %v, taints %v, unschedulable %v\n", n.Name, nodeConditions(n), n.Spec.Taints, n.Spec.Unschedulable)
		}
	}
	if pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + adsName}); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s on %s: phase %s, labels %v, conditions %v, deleting %v\n", p.Name, p.Spec.NodeName,
				p.Status.Phase, p.Labels, podConditions(p), p.DeletionTimestamp != nil)
		}
	}
	return b.String()
}

func nodeConditions(n corev1.Node) []string {
	var out []string
	for _, c := range n.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return out
}

func podConditions(p corev1.Pod) []string {
	var out []string
	for _, c := range p.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Message))
	}
	return out
}

// adsPods are the DaemonSet's pods not being deleted, by node.
func adsPods(ctx context.Context, ns string) map[string]corev1.Pod {
	GinkgoHelper()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + adsName})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = p
		}
	}
	return out
}

// imagesByNode is the image each node's pod runs.
func imagesByNode(pods map[string]corev1.Pod) map[string]string {
	out := map[string]string{}
	for node, p := range pods {
		out[node] = p.Spec.Containers[0].Image
	}
	return out
}

// poolImages is the image every pool node i runs: latest on the nodes of old, alpine elsewhere.
func poolImages(nodes int, old ...int) map[string]string {
	out := map[string]string{}
	for i := range nodes {
		out[poolNodeName(i)] = "nginx:alpine"
	}
	for _, i := range old {
		out[poolNodeName(i)] = "nginx:latest"
	}
	return out
}

func patchADS(ctx context.Context, ns string, pt types.PatchType, patch string) {
	GinkgoHelper()
	_, err := dyn.Resource(advancedDaemonSets).Namespace(ns).Patch(ctx, adsName, pt, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// setNewImage changes the seed's nginx:latest to nginx:alpine (a JSON patch: a merge patch would replace the
// whole container list).
func setNewImage(ctx context.Context, ns string) {
	GinkgoHelper()
	patchADS(ctx, ns, types.JSONPatchType, `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:alpine"}]`)
}

func setRollingUpdate(ctx context.Context, ns, rollingUpdate string) {
	GinkgoHelper()
	patchADS(ctx, ns, types.MergePatchType, `{"spec":{"updateStrategy":{"rollingUpdate":`+rollingUpdate+`}}}`)
}

// adsEvents are the notes of the DaemonSet's events of reason, all from upstream's daemonset-controller.
func adsEvents(ctx context.Context, ns, reason string) []string {
	GinkgoHelper()
	list, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "DaemonSet" && e.Regarding.Name == adsName && e.Reason == reason {
			Expect(e.ReportingController).To(Equal("daemonset-controller"))
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// nodeWatch samples the pool's nodes and the DaemonSet's pods until stopped and keeps what the invariants
// need: the most nodes at once without an available pod among those that had one, and the most pods not
// being deleted on one node.
type nodeWatch struct {
	mu                 sync.Mutex
	maxDown, maxOnNode int
	had                map[string]bool
	stop               context.CancelFunc
	done               chan struct{}
}

func watchPool(ctx context.Context, ns string) *nodeWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &nodeWatch{had: map[string]bool{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		for ctx.Err() == nil {
			nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: poolLabel + "=true"})
			pods, err2 := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + adsName})
			if err == nil && err2 == nil {
				w.sample(nodes.Items, pods.Items)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return w
}

func (w *nodeWatch) sample(nodes []corev1.Node, pods []corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	active, available := map[string]int{}, map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			active[p.Spec.NodeName]++
			available[p.Spec.NodeName] = available[p.Spec.NodeName] || podReady(p)
		}
	}
	down := 0
	for _, n := range nodes {
		if available[n.Name] {
			w.had[n.Name] = true
		} else if w.had[n.Name] {
			down++
		}
		w.maxOnNode = max(w.maxOnNode, active[n.Name])
	}
	w.maxDown = max(w.maxDown, down)
}

// expect stops the watch and checks the update's invariants: never more than maxUnavailable nodes without an
// available pod, never more than perNode pods on a node (1, or 2 in a surge).
func (w *nodeWatch) expect(maxUnavailable, perNode int) {
	GinkgoHelper()
	w.stop()
	<-w.done
	Expect(w.maxDown).To(BeNumerically("<=", maxUnavailable), "nodes without an available pod at once")
	Expect(w.maxOnNode).To(BeNumerically("<=", perNode), "pods on one node at once")
}

// kubectlGet runs the suite's kubectl get and returns its rows.
func kubectlGet(ctx context.Context, ns string, args ...string) []string {
	GinkgoHelper()
	args = append([]string{"--kubeconfig", testCluster.KubeconfigPath(), "-n", ns, "get"}, args...)
	out, err := exec.CommandContext(ctx, filepath.Join(testCluster.BinDir(), "kubectl"), args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s", out)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

var _ = Describe("Advanced DaemonSet stories", Serial, Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		DeferCleanup(func(ctx SpecContext) {
			for i := range poolNodes + 1 {
				removePoolNode(ctx, i)
			}
		})
		for i := range poolNodes {
			addPoolNode(ctx, i)
		}
	})

	It("runs a pod per node and updates only the 2 of 6 canary nodes its rolling selector picks", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ads-canary-")
		applyPoolDaemonSet(ctx, "021-daemonset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(obj.Object, map[string]any{"matchExpressions": []any{map[string]any{
				"key": corev1.LabelHostname, "operator": "In", "values": []any{poolNodeName(0), poolNodeName(1)}}}},
				"spec", "updateStrategy", "rollingUpdate", "selector")).To(Succeed())
		})
		st := waitADS(ctx, ns, poolNodes)
		Expect(st.DaemonSetHash).NotTo(BeEmpty())
		for node, p := range adsPods(ctx, ns) {
			Expect(p.Labels).To(HaveKeyWithValue("controller-revision-hash", st.DaemonSetHash), "pod on %s", node)
		}
		rows := kubectlGet(ctx, ns, "daemon")
		Expect(rows).To(HaveLen(2))
		Expect(strings.Fields(rows[0])).To(Equal([]string{"NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"}))
		Expect(strings.Fields(rows[1])[:6]).To(Equal([]string{adsName, "6", "6", "6", "6", "6"}))

		w := watchPool(ctx, ns)
		setNewImage(ctx, ns)
		waitADS(ctx, ns, 2)
		Expect(imagesByNode(adsPods(ctx, ns))).To(Equal(poolImages(poolNodes, 2, 3, 4, 5)))

		By("dropping the selector: every node")
		setRollingUpdate(ctx, ns, `{"selector":null}`)
		waitADS(ctx, ns, poolNodes)
		w.expect(1, 1)
		Expect(imagesByNode(adsPods(ctx, ns))).To(Equal(poolImages(poolNodes)))
		expectEvents(ctx, func() []string { return adsEvents(ctx, ns, "SuccessfulDelete") }, HaveLen(poolNodes))
		expectEvents(ctx, func() []string { return adsEvents(ctx, ns, "SuccessfulCreate") }, WithTransform(func(notes []string) int { return len(notes) }, BeNumerically(">=", poolNodes)))
	})

	It("keeps the partition's nodes on the old template, counted in pods or percent, and holds while paused", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ads-partition-")
		applyPoolDaemonSet(ctx, "020-daemonset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(obj.Object, int64(4), "spec", "updateStrategy", "rollingUpdate", "partition")).To(Succeed())
			Expect(unstructured.SetNestedField(obj.Object, int64(2), "spec", "updateStrategy", "rollingUpdate", "maxUnavailable")).To(Succeed())
		})
		waitADS(ctx, ns, poolNodes)
		w := watchPool(ctx, ns)
		setNewImage(ctx, ns)
		waitADS(ctx, ns, 2)
		Expect(countImages(adsPods(ctx, ns))).To(Equal(map[string]int{"nginx:alpine": 2, "nginx:latest": 4}))

		setRollingUpdate(ctx, ns, `{"partition":"50%"}`)
		waitADS(ctx, ns, 3)

		By("paused: the partition moves, the pods do not")
		setRollingUpdate(ctx, ns, `{"paused":true}`)
		Eventually(func() bool { ds := readADS(ctx, ns); return ds.Status.ObservedGeneration == ds.Generation }).
			WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue())
		setRollingUpdate(ctx, ns, `{"partition":0}`)
		waitADS(ctx, ns, 3)
		Expect(countImages(adsPods(ctx, ns))).To(Equal(map[string]int{"nginx:alpine": 3, "nginx:latest": 3}))

		By("resumed: every node")
		setRollingUpdate(ctx, ns, `{"paused":false}`)
		waitADS(ctx, ns, poolNodes)
		w.expect(2, 1)
	})

	It("serves v1beta1: partitionedScaling creates pods as the partition goes down, seen in v1alpha1 as the annotation", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ads-v1beta1-")
		By("a v1beta1 object is defaulted and validated like a v1alpha1 one")
		bad := seedObject("020-daemonset-nginx.yaml")
		bad.SetAPIVersion(advancedDaemonSetsV1beta1.GroupVersion().String())
		bad.SetNamespace(ns)
		Expect(unstructured.SetNestedField(bad.Object, map[string]any{"rollingUpdateType": "InPlaceIfPossible", "maxSurge": int64(1)},
			"spec", "updateStrategy", "rollingUpdate")).To(Succeed())
		_, err := dyn.Resource(advancedDaemonSetsV1beta1).Namespace(ns).Create(ctx, bad, metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring("spec.updateStrategy.rollingUpdate.maxSurge")))

		applyPoolDaemonSetAs(ctx, advancedDaemonSetsV1beta1, "020-daemonset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(obj.Object, int64(4), "spec", "updateStrategy", "rollingUpdate", "partition")).To(Succeed())
			Expect(unstructured.SetNestedField(obj.Object, true, "spec", "scaleStrategy", "partitionedScaling")).To(Succeed())
		})
		var served *unstructured.Unstructured
		Eventually(func() []any {
			served, err = dyn.Resource(advancedDaemonSetsV1beta1).Namespace(ns).Get(ctx, adsName, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			st, _, _ := unstructured.NestedMap(served.Object, "status")
			return []any{st["desiredNumberScheduled"], st["currentNumberScheduled"], st["numberAvailable"], len(adsPods(ctx, ns))}
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).Should(Equal([]any{int64(6), int64(2), int64(2), 2}),
			"the partition of 4 holds back 4 of the 6 nodes' pods")
		Expect(adsPods(ctx, ns)).To(SatisfyAll(HaveKey(poolNodeName(0)), HaveKey(poolNodeName(1))))

		stored := readADS(ctx, ns)
		Expect(stored.Annotations).To(HaveKeyWithValue(kruiseappsv1alpha1.ProgressiveCreatePodAnnotation, "true"))
		Expect(served.GetAnnotations()).NotTo(HaveKey(kruiseappsv1alpha1.ProgressiveCreatePodAnnotation))
		revision, _, _ := unstructured.NestedString(served.Object, "status", "updateRevision")
		Expect(revision).To(And(Not(BeEmpty()), Equal(stored.Status.DaemonSetHash)))
		rows := kubectlGet(ctx, ns, "daemonsets.v1beta1.apps.kruise.io")
		Expect(strings.Fields(rows[1])[:6]).To(Equal([]string{adsName, "6", "2", "2", "2", "2"}))

		By("the partition goes down: every node gets its pod")
		_, err = dyn.Resource(advancedDaemonSetsV1beta1).Namespace(ns).Patch(ctx, adsName, types.MergePatchType,
			[]byte(`{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		waitADS(ctx, ns, poolNodes)

		By("a v1beta1 client turning the setting off turns it off for v1alpha1 clients too")
		_, err = dyn.Resource(advancedDaemonSetsV1beta1).Namespace(ns).Patch(ctx, adsName, types.MergePatchType,
			[]byte(`{"spec":{"scaleStrategy":null}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(readADS(ctx, ns).Annotations).NotTo(HaveKey(kruiseappsv1alpha1.ProgressiveCreatePodAnnotation))
	})

	It("surges: each node's new pod starts beside the old one, no node ever without an available pod", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ads-surge-")
		applyPoolDaemonSet(ctx, "020-daemonset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(obj.Object, map[string]any{"rollingUpdateType": "Surging", "maxUnavailable": int64(0),
				"maxSurge": "34%"}, "spec", "updateStrategy", "rollingUpdate")).To(Succeed())
		})
		waitADS(ctx, ns, poolNodes)
		w := watchPool(ctx, ns)
		setNewImage(ctx, ns)
		waitADS(ctx, ns, poolNodes)
		w.expect(0, 2)
		Expect(countImages(adsPods(ctx, ns))).To(Equal(map[string]int{"nginx:alpine": poolNodes}))
	})

	It("updates in place: same pods, one restart each, the readiness gate held while the container restarts", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ads-inplace-")
		applyPoolDaemonSet(ctx, "022-daemonset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(obj.Object, []any{map[string]any{"name": "nginx", "image": "nginx:latest"}},
				"spec", "template", "spec", "containers")).To(Succeed())
			unstructured.RemoveNestedField(obj.Object, "spec", "updateStrategy", "rollingUpdate", "selector")
		})
		waitADS(ctx, ns, poolNodes)
		before := adsPods(ctx, ns)
		for _, p := range before {
			Expect(p.Spec.ReadinessGates).To(ContainElement(corev1.PodReadinessGate{ConditionType: "InPlaceUpdateReady"}))
		}
		w := watchPool(ctx, ns)
		setNewImage(ctx, ns)
		st := waitADS(ctx, ns, poolNodes)
		w.expect(1, 1)
		after := adsPods(ctx, ns)
		var notes []string
		for node, p := range after {
			old := before[node]
			Expect(p.Name).To(Equal(old.Name))
			Expect(p.UID).To(Equal(old.UID))
			Expect(p.Spec.Containers[0].Image).To(Equal("nginx:alpine"))
			Expect(p.Status.ContainerStatuses[0].RestartCount).To(Equal(old.Status.ContainerStatuses[0].RestartCount + 1))
			Expect(p.Labels).To(HaveKeyWithValue("controller-revision-hash", st.DaemonSetHash))
			notes = append(notes, fmt.Sprintf("successfully update pod %s in-place", p.Name))
		}
		expectEvents(ctx, func() []string { return adsEvents(ctx, ns, "SuccessfulUpdatePodInPlace") }, ConsistOf(notes))
		Expect(adsEvents(ctx, ns, "SuccessfulDelete")).To(BeEmpty())
	})

	It("holds a replaced pod in PreparingDelete until its preDelete hook's label goes", func(ctx SpecContext) {
		const hook = "example.io/block-deleting"
		ns := newNamespace(ctx, "ads-predelete-")
		applyPoolDaemonSet(ctx, "020-daemonset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(obj.Object, map[string]any{"preDelete": map[string]any{
				"labelsHandler": map[string]any{hook: "true"}}}, "spec", "lifecycle")).To(Succeed())
			Expect(unstructured.SetNestedField(obj.Object, "true", "spec", "template", "metadata", "labels", hook)).To(Succeed())
		})
		waitADS(ctx, ns, poolNodes)
		w := watchPool(ctx, ns)
		setNewImage(ctx, ns)
		var held corev1.Pod
		Eventually(func() string {
			for _, p := range adsPods(ctx, ns) {
				if p.Labels["lifecycle.apps.kruise.io/state"] == "PreparingDelete" {
					held = p
				}
			}
			return held.Name
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).ShouldNot(BeEmpty())
		Expect(adsEvents(ctx, ns, "SuccessfulDelete")).To(BeEmpty(), "no pod deleted while its hook holds it")

		By("the hook's operator lets each pod go in turn")
		Eventually(func() int32 {
			for _, p := range adsPods(ctx, ns) {
				if p.Labels["lifecycle.apps.kruise.io/state"] == "PreparingDelete" && p.Labels[hook] == "true" {
					_, _ = kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType,
						fmt.Appendf(nil, `{"metadata":{"labels":{%q:null}}}`, hook), metav1.PatchOptions{})
				}
			}
			return readADS(ctx, ns).Status.UpdatedNumberScheduled
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(BeNumerically("==", poolNodes))
		waitADS(ctx, ns, poolNodes)
		w.expect(1, 1)
		expectEvents(ctx, func() []string { return adsEvents(ctx, ns, "SuccessfulDelete") }, ContainElement("Deleted pod: "+held.Name))
	})

	It("gives a node added mid-update its new pod and takes a removed node's away", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ads-churn-")
		applyPoolDaemonSet(ctx, "020-daemonset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(obj.Object, int64(3), "spec", "updateStrategy", "rollingUpdate", "partition")).To(Succeed())
		})
		waitADS(ctx, ns, poolNodes)
		w := watchPool(ctx, ns)
		setNewImage(ctx, ns)
		waitADS(ctx, ns, 3)

		By("a seventh node joins and a node of the old template leaves, in the middle of the update")
		leaving := -1
		for i := range poolNodes {
			if adsPods(ctx, ns)[poolNodeName(i)].Spec.Containers[0].Image == "nginx:latest" {
				leaving = i
			}
		}
		addPoolNode(ctx, poolNodes)
		removePoolNode(ctx, leaving)
		// The partition keeps 3 old pods of which one left: 4 updated, the new node's among them.
		waitADS(ctx, ns, 4)
		pods := adsPods(ctx, ns)
		Expect(pods).NotTo(HaveKey(poolNodeName(leaving)))
		Expect(pods).To(HaveKey(poolNodeName(poolNodes)))
		Expect(pods[poolNodeName(poolNodes)].Spec.Containers[0].Image).To(Equal("nginx:alpine"), "a new node runs the new template")

		setRollingUpdate(ctx, ns, `{"partition":0}`)
		waitADS(ctx, ns, poolNodes)
		w.expect(1, 1)
		Expect(countImages(adsPods(ctx, ns))).To(Equal(map[string]int{"nginx:alpine": poolNodes}))
		// The pool keeps 6 nodes for the stories after this one: the seventh stays in the one that left.
	})

	It("is released by a Rollout in batches, each after an approval", func(ctx SpecContext) {
		s := &story{ns: newNamespace(ctx, "ads-rollout-"), kind: "DaemonSet"}
		applyPoolDaemonSet(ctx, "020-daemonset-nginx.yaml", s.ns, nil)
		waitADS(ctx, s.ns, poolNodes)
		doc := fmt.Sprintf("apiVersion: rollouts.kruise.io/v1beta1\nkind: Rollout\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n"+
			"  workloadRef:\n    apiVersion: apps.kruise.io/v1alpha1\n    kind: DaemonSet\n    name: %s\n  strategy:\n"+
			"    canary:\n      steps:\n      - replicas: 1\n      - replicas: 50%%\n      - replicas: 100%%\n", appName, s.ns, adsName)
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		_, err := dyn.Resource(rolloutsV1beta1).Namespace(s.ns).Create(ctx, obj, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		s.waitPhase(ctx, "Healthy")

		w := watchPool(ctx, s.ns)
		setNewImage(ctx, s.ns)
		s.waitStep(ctx, "Progressing 1/StepPaused")
		waitADS(ctx, s.ns, 1)
		By("approving: half the nodes")
		s.approve(ctx)
		s.waitStep(ctx, "Progressing 2/StepPaused")
		waitADS(ctx, s.ns, 3)
		By("approving again: every node")
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		Expect(s.succeeded(ctx)).To(Equal("True/Success"))
		waitADS(ctx, s.ns, poolNodes)
		w.expect(1, 1)
		released := readADS(ctx, s.ns)
		Expect(released.Annotations).NotTo(HaveKey("rollouts.kruise.io/in-progressing"))
		Expect(released.Spec.UpdateStrategy.RollingUpdate.Partition).To(Or(BeNil(), HaveValue(Equal(intstr.FromInt32(0)))))
	})
})

var _ = Describe("Advanced DaemonSets through kubectl kruise", Serial, Ordered, func() {
	var bin string

	BeforeAll(func(ctx SpecContext) {
		DeferCleanup(func(ctx SpecContext) {
			for i := range poolNodes {
				removePoolNode(ctx, i)
			}
		})
		for i := range poolNodes {
			addPoolNode(ctx, i)
		}
		bin = binaryOf(ctx, "./rollout/cmd/kubectl-kruise", "kubectl-kruise")
	}, NodeTimeout(4*time.Minute))

	It("sets the image, shows the history, undoes, pauses, restarts and resumes", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ads-plugin-")
		applyPoolDaemonSet(ctx, "020-daemonset-nginx.yaml", ns, nil)
		waitADS(ctx, ns, poolNodes)
		run := func(args ...string) string {
			GinkgoHelper()
			out, code := kruise(ctx, bin, ns, args...)
			Expect(code).To(Equal(0), "kubectl kruise %v:\n%s", args, out)
			return out
		}

		Expect(run("set", "image", "ads/nginx", "nginx=nginx:alpine")).To(Equal("daemonset.apps.kruise.io/nginx image updated\n"))
		waitADS(ctx, ns, poolNodes)
		Expect(countImages(adsPods(ctx, ns))).To(Equal(map[string]int{"nginx:alpine": poolNodes}))
		Expect(strings.Fields(run("rollout", "history", "ads/nginx"))).To(Equal([]string{"daemonset.apps.kruise.io/nginx", "REVISION", "CHANGE-CAUSE", "1", "<none>", "2", "<none>"}))

		Expect(run("rollout", "undo", "ads/nginx")).To(Equal("daemonset.apps.kruise.io/nginx rolled back\n"))
		waitADS(ctx, ns, poolNodes)
		Expect(countImages(adsPods(ctx, ns))).To(Equal(map[string]int{"nginx:latest": poolNodes}))
		Expect(strings.Fields(run("rollout", "history", "ads/nginx"))).To(Equal([]string{"daemonset.apps.kruise.io/nginx", "REVISION", "CHANGE-CAUSE", "2", "<none>", "3", "<none>"}),
			"the undone revision is renumbered, not copied")

		By("paused, a restart waits for the resume")
		Expect(run("rollout", "pause", "ads/nginx")).To(Equal("daemonset.apps.kruise.io/nginx paused\n"))
		before := adsPods(ctx, ns)
		run("rollout", "restart", "ads/nginx")
		waitADS(ctx, ns, 0)
		Expect(adsPods(ctx, ns)).To(Equal(before))
		Expect(run("rollout", "resume", "ads/nginx")).To(Equal("daemonset.apps.kruise.io/nginx resumed\n"))
		waitADS(ctx, ns, poolNodes)
		for node, p := range adsPods(ctx, ns) {
			Expect(p.UID).NotTo(Equal(before[node].UID), "node %s: restarted", node)
			Expect(p.Spec.Containers[0].Env).To(ContainElement(HaveField("Name", "RESTARTED_AT")))
		}
	})
})

func countImages(pods map[string]corev1.Pod) map[string]int {
	out := map[string]int{}
	for _, p := range pods {
		out[p.Spec.Containers[0].Image]++
	}
	return out
}
