package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var advancedStatefulSets = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "statefulsets"}

// seedInPlaceRevision is the revision upstream gave the seed's in-place example (`kubectl describe asts
// nginx-a`: "successfully update pod nginx-a-4 in-place(revision nginx-a-79b799b689)").
const seedInPlaceRevision = "nginx-a-79b799b689"

// applySeedSet applies a seed Advanced StatefulSet into ns, with changes to it, and returns its name.
func applySeedSet(ctx context.Context, file, ns string, change func(obj *unstructured.Unstructured)) string {
	GinkgoHelper()
	obj := seedObject(file)
	obj.SetNamespace(ns)
	if change != nil {
		change(obj)
	}
	ensureNamespace(ctx, ns)
	_, err := apply(ctx, target{gvr: advancedStatefulSets, namespaced: true, namespace: ns}, obj)
	Expect(err).NotTo(HaveOccurred())
	return obj.GetName()
}

func setField(value any, path ...string) func(*unstructured.Unstructured) {
	return func(obj *unstructured.Unstructured) {
		Expect(unstructured.SetNestedField(obj.Object, value, path...)).To(Succeed())
	}
}

// withImage sets the first container's image.
func withImage(image string) func(*unstructured.Unstructured) {
	return func(obj *unstructured.Unstructured) {
		containers, _, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		Expect(err).NotTo(HaveOccurred())
		containers[0].(map[string]any)["image"] = image
		Expect(unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers")).To(Succeed())
	}
}

func patchSet(ctx context.Context, ns, name string, pt types.PatchType, patch string) {
	GinkgoHelper()
	_, err := dyn.Resource(advancedStatefulSets).Namespace(ns).Patch(ctx, name, pt, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// setSetImage changes the first container's image.
func setSetImage(ctx context.Context, ns, name, image string) {
	GinkgoHelper()
	patchSet(ctx, ns, name, types.JSONPatchType, fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, image))
}

// setStatus is what kubectl's printer columns, Argo CD's health check, kubectl-kruise and the Rollout engine
// read of an Advanced StatefulSet.
type setStatus struct {
	Generation, ObservedGeneration                                           int64
	Replicas, Ready, Available, Current, Updated, UpdatedReady, UpdatedAvail int64
	UpdateRevision, CurrentRevision, LabelSelector                           string
}

func readSet(ctx context.Context, ns, name string) setStatus {
	GinkgoHelper()
	obj, err := dyn.Resource(advancedStatefulSets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	n := func(f string) int64 { v, _, _ := unstructured.NestedInt64(obj.Object, "status", f); return v }
	s := func(f string) string { v, _, _ := unstructured.NestedString(obj.Object, "status", f); return v }
	return setStatus{Generation: obj.GetGeneration(), ObservedGeneration: n("observedGeneration"), Replicas: n("replicas"),
		Ready: n("readyReplicas"), Available: n("availableReplicas"), Current: n("currentReplicas"), Updated: n("updatedReplicas"),
		UpdatedReady: n("updatedReadyReplicas"), UpdatedAvail: n("updatedAvailableReplicas"),
		UpdateRevision: s("updateRevision"), CurrentRevision: s("currentRevision"), LabelSelector: s("labelSelector")}
}

// waitSet waits until the set at its current generation has replicas pods, all available, and updated of
// them available on the update revision.
func waitSet(ctx context.Context, ns, name string, replicas, updated int64) setStatus {
	GinkgoHelper()
	var got setStatus
	pods := 0
	Eventually(func() bool {
		got, pods = readSet(ctx, ns, name), len(setPods(ctx, ns, name))
		return got.ObservedGeneration == got.Generation && got.Replicas == replicas && got.Available == replicas &&
			got.UpdatedAvail == updated && pods == int(replicas)
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).Should(BeTrue(),
		func() string {
			return fmt.Sprintf("StatefulSet %s/%s: %+v, %d pods\n%s", ns, name, got, pods, describePods(ns, "app="+name))
		})
	return got
}

// setPods lists the set's pods (label app=<name>) not being deleted, by name.
func setPods(ctx context.Context, ns, name string) []corev1.Pod {
	GinkgoHelper()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	Expect(err).NotTo(HaveOccurred())
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func podNameList(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// setEvents returns the notes of the set's events with reason.
func setEvents(ctx context.Context, ns, name, reason string) []string {
	GinkgoHelper()
	list, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "StatefulSet" && e.Regarding.APIVersion == "apps.kruise.io/v1beta1" && e.Regarding.Name == name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// claimWatch samples a namespace's claims until stopped and keeps every claim it saw.
type claimWatch struct {
	mu   sync.Mutex
	seen map[types.UID]string
	stop context.CancelFunc
	done chan struct{}
}

func watchClaims(ctx context.Context, ns string) *claimWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &claimWatch{seen: map[types.UID]string{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		for ctx.Err() == nil {
			if list, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{}); err == nil {
				w.mu.Lock()
				for _, c := range list.Items {
					w.seen[c.UID] = c.Name
				}
				w.mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return w
}

// expectNoneLost stops the watch and requires every claim it saw to be there still, not being deleted: what
// a Retain policy promises.
func (w *claimWatch) expectNoneLost(ctx context.Context, ns string) {
	GinkgoHelper()
	w.stop()
	<-w.done
	Expect(w.seen).NotTo(BeEmpty(), "no claim seen at all")
	live := map[types.UID]bool{}
	for _, c := range liveClaims(ctx, ns) {
		live[c.UID] = true
	}
	var lost []string
	for uid, name := range w.seen {
		if !live[uid] {
			lost = append(lost, name)
		}
	}
	Expect(lost).To(BeEmpty(), "claims lost")
}

var _ = Describe("Advanced StatefulSet stories", func() {
	It("creates the seed's Parallel set at once, with upstream's identity, revision, columns and events", func(ctx SpecContext) {
		ns := newNamespace(ctx, "asts-parallel-")
		w := watchSetPods(ctx, ns, "nginx")
		name := applySeedSet(ctx, "012-statefulset-nginx.yaml", ns, nil)
		st := waitSet(ctx, ns, name, 5, 5)
		w.expect(ctx, ns, 5, 0)
		pods := setPods(ctx, ns, name)
		Expect(podNameList(pods)).To(Equal([]string{"nginx-0", "nginx-1", "nginx-2", "nginx-3", "nginx-4"}))
		created := make([]time.Time, 0, len(pods))
		for i, p := range pods {
			created = append(created, p.CreationTimestamp.Time)
			Expect(p.Labels).To(HaveKeyWithValue("statefulset.kubernetes.io/pod-name", p.Name))
			Expect(p.Labels).To(HaveKeyWithValue("apps.kubernetes.io/pod-index", fmt.Sprint(i)))
			Expect(p.Labels).To(HaveKeyWithValue("controller-revision-hash", st.UpdateRevision))
			Expect(p.Spec.Hostname).To(Equal(p.Name))
			Expect(p.Spec.Subdomain).To(Equal("nginx-headless"))
		}
		slices.SortFunc(created, func(a, b time.Time) int { return a.Compare(b) })
		Expect(created[len(created)-1].Sub(created[0])).To(BeNumerically("<=", 2*time.Second), "Parallel creates every pod at once")
		Expect(st.CurrentRevision).To(Equal(st.UpdateRevision))
		Expect(st.LabelSelector).To(Equal("app=nginx"))
		Eventually(func() []string { return setEvents(ctx, ns, name, "SuccessfulCreate") }).WithContext(ctx).
			WithTimeout(30 * time.Second).WithPolling(poll).Should(ContainElement("create Pod nginx-0 in StatefulSet nginx successful"))
		out, err := testCluster.Kubectl(ctx, "get", "asts", "-n", ns, "-o", "wide")
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(strings.Fields(strings.Split(string(out), "\n")[0])).To(Equal([]string{"NAME", "DESIRED", "CURRENT", "UPDATED", "READY", "AGE", "CONTAINERS", "IMAGES"}))
		Expect(strings.Fields(strings.Split(string(out), "\n")[1])[:5]).To(Equal([]string{"nginx", "5", "5", "5", "5"}))
	})

	It("updates the seed's set three pods at a time with maxUnavailable 3, never more unavailable", func(ctx SpecContext) {
		ns := newNamespace(ctx, "asts-maxunavailable-")
		name := applySeedSet(ctx, "012-statefulset-nginx.yaml", ns, nil)
		before := waitSet(ctx, ns, name, 5, 5)
		w := watchSetPods(ctx, ns, name)
		setSetImage(ctx, ns, name, "nginx:alpine")
		st := waitSet(ctx, ns, name, 5, 5)
		Expect(st.UpdateRevision).NotTo(Equal(before.UpdateRevision))
		Expect(st.CurrentRevision).To(Equal(st.UpdateRevision))
		w.expect(ctx, ns, 5, 2)
		Expect(w.created("")).To(BeNumerically(">=", 10), "every pod recreated under the default ReCreate policy")
	})

	It("updates only ordinals from the partition up: partition 4 of 5, then 0", func(ctx SpecContext) {
		ns := newNamespace(ctx, "asts-partition-")
		name := applySeedSet(ctx, "013-statefulset-nginx-a.yaml", ns, withImage("nginx:alpine"))
		waitSet(ctx, ns, name, 5, 5)
		w := watchSetPods(ctx, ns, name)
		setSetImage(ctx, ns, name, "nginx:latest")
		st := waitSet(ctx, ns, name, 5, 1)
		Consistently(func() int64 { return readSet(ctx, ns, name).Updated }).WithContext(ctx).WithTimeout(2 * time.Second).WithPolling(poll).Should(Equal(int64(1)))
		images := map[string]string{}
		for _, p := range setPods(ctx, ns, name) {
			images[p.Name] = p.Spec.Containers[0].Image
		}
		Expect(images).To(Equal(map[string]string{"nginx-a-0": "nginx:alpine", "nginx-a-1": "nginx:alpine", "nginx-a-2": "nginx:alpine",
			"nginx-a-3": "nginx:alpine", "nginx-a-4": "nginx:latest"}))
		Expect(st.CurrentRevision).NotTo(Equal(st.UpdateRevision))
		patchSet(ctx, ns, name, types.MergePatchType, `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
		waitSet(ctx, ns, name, 5, 5)
		w.expect(ctx, ns, 5, 2)
	})

	It("updates the seed's set in place behind the readiness gate, each pod through its grace period", func(ctx SpecContext) {
		ns := newNamespace(ctx, "asts-inplace-")
		// The seed's in-place example, first applied with the image it moves away from and partition 0.
		name := applySeedSet(ctx, "015-statefulset-nginx-a.yaml", ns, func(obj *unstructured.Unstructured) {
			withImage("nginx:latest")(obj)
			setField(int64(0), "spec", "updateStrategy", "rollingUpdate", "partition")(obj)
		})
		waitSet(ctx, ns, name, 5, 5)
		before := setPods(ctx, ns, name)
		w := watchSetPods(ctx, ns, name)
		start := time.Now()
		setSetImage(ctx, ns, name, "nginx:alpine")
		st := waitSet(ctx, ns, name, 5, 5)
		Expect(st.UpdateRevision).To(Equal(seedInPlaceRevision), "the revision upstream gave the seed's template")
		Expect(time.Since(start)).To(BeNumerically(">=", 9*time.Second), "gracePeriodSeconds 10 (recorded to the second)")
		w.expect(ctx, ns, 5, 2)
		after := setPods(ctx, ns, name)
		for i, p := range after {
			Expect(p.UID).To(Equal(before[i].UID), "pod %s updated in place", p.Name)
			Expect(p.Spec.NodeName).To(Equal(before[i].Spec.NodeName))
			Expect(p.Spec.Containers[0].Image).To(Equal("nginx:alpine"))
			Expect(p.Status.ContainerStatuses[0].RestartCount).To(Equal(before[i].Status.ContainerStatuses[0].RestartCount + 1))
		}
		var want []string
		for _, p := range after {
			want = append(want, fmt.Sprintf("successfully update pod %s in-place(revision %s)", p.Name, seedInPlaceRevision))
		}
		Eventually(func() []string { return setEvents(ctx, ns, name, "SuccessfulUpdatePodInPlace") }).WithContext(ctx).
			WithTimeout(30 * time.Second).WithPolling(poll).Should(ConsistOf(want))
	})

	It("refuses the seed's in-place example without the InPlaceUpdateReady readiness gate, naming the field", func(ctx SpecContext) {
		ns := newNamespace(ctx, "asts-refused-")
		obj := seedObject("014-statefulset-nginx-a.yaml")
		obj.SetNamespace(ns)
		_, err := apply(ctx, target{gvr: advancedStatefulSets, namespaced: true, namespace: ns}, obj)
		Expect(err).To(MatchError(And(ContainSubstring("vstatefulset.kb.io"), ContainSubstring("spec.template.spec.readinessGates"),
			ContainSubstring("must contains InPlaceUpdateReady when podUpdatePolicy is InPlaceIfPossible"))))
	})

	It("holds the update while paused and goes on when resumed", func(ctx SpecContext) {
		ns := newNamespace(ctx, "asts-paused-")
		name := applySeedSet(ctx, "012-statefulset-nginx.yaml", ns, setField(true, "spec", "updateStrategy", "rollingUpdate", "paused"))
		waitSet(ctx, ns, name, 5, 5)
		setSetImage(ctx, ns, name, "nginx:alpine")
		Eventually(func() bool { st := readSet(ctx, ns, name); return st.ObservedGeneration == st.Generation }).WithContext(ctx).
			WithTimeout(30 * time.Second).WithPolling(poll).Should(BeTrue())
		Consistently(func() int64 { return readSet(ctx, ns, name).Updated }).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(poll).Should(BeZero())
		patchSet(ctx, ns, name, types.MergePatchType, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":false}}}}`)
		waitSet(ctx, ns, name, 5, 5)
	})

	It("keeps ordinal 1 free with the seed's reserveOrdinals: pods 0 2 3 4", func(ctx SpecContext) {
		ns := newNamespace(ctx, "asts-reserve-")
		name := applySeedSet(ctx, "015-statefulset-nginx-a.yaml", ns, setField(int64(0), "spec", "updateStrategy", "rollingUpdate", "partition"))
		waitSet(ctx, ns, name, 5, 5)
		w := watchSetPods(ctx, ns, name)
		name = applySeedSet(ctx, "016-statefulset-nginx-a.yaml", ns, nil)
		waitSet(ctx, ns, name, 4, 4)
		Expect(podNameList(setPods(ctx, ns, name))).To(Equal([]string{"nginx-a-0", "nginx-a-2", "nginx-a-3", "nginx-a-4"}))
		w.expect(ctx, ns, 5, 4)
	})

	It("creates pods as fast as scaleStrategy.maxUnavailable allows", func(ctx SpecContext) {
		ns := newNamespace(ctx, "asts-scale-")
		name := applySeedSet(ctx, "012-statefulset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			setField(int64(1), "spec", "replicas")(obj)
			setField("10%", "spec", "scaleStrategy", "maxUnavailable")(obj)
			setField(int64(1), "spec", "updateStrategy", "rollingUpdate", "minReadySeconds")(obj)
		})
		waitSet(ctx, ns, name, 1, 1)
		w := watchSetPods(ctx, ns, name)
		patchSet(ctx, ns, name, types.MergePatchType, `{"spec":{"replicas":20}}`)
		waitSet(ctx, ns, name, 20, 20)
		w.expect(ctx, ns, 20, 1)
		Expect(w.notReady()).To(BeNumerically("<=", 2), "10% of 20 pods may be unavailable while the set scales")
		expectEvents(ctx, func() []string { return setEvents(ctx, ns, name, "ScaleUpLimited") },
			ContainElement("scaleUp is limited because of scaleStrategy.maxUnavailable, limit: 2"))
	})
})

// withClaimTemplate gives the set a claim template "data" of 1Gi, mounted by its container, and the retention
// policy given.
func withClaimTemplate(whenDeleted, whenScaled string) func(*unstructured.Unstructured) {
	return func(obj *unstructured.Unstructured) {
		Expect(unstructured.SetNestedSlice(obj.Object, []any{map[string]any{
			"metadata": map[string]any{"name": "data"},
			"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"},
				"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}},
		}}, "spec", "volumeClaimTemplates")).To(Succeed())
		containers, _, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		Expect(err).NotTo(HaveOccurred())
		containers[0].(map[string]any)["volumeMounts"] = []any{map[string]any{"name": "data", "mountPath": "/data"}}
		Expect(unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers")).To(Succeed())
		Expect(unstructured.SetNestedStringMap(obj.Object, map[string]string{"whenDeleted": whenDeleted, "whenScaled": whenScaled},
			"spec", "persistentVolumeClaimRetentionPolicy")).To(Succeed())
	}
}

var _ = Describe("Advanced StatefulSet claims", func() {
	It("keeps every claim when the retention policy says Retain: through a scale-down, back up, and the set's deletion", func(ctx SpecContext) {
		ns := newNamespace(ctx, "asts-retain-")
		for i := range 3 {
			createHostPathPV(ctx, fmt.Sprintf("%s-%d", ns, i))
		}
		claims := watchClaims(ctx, ns)
		name := applySeedSet(ctx, "012-statefulset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			setField(int64(3), "spec", "replicas")(obj)
			withClaimTemplate("Retain", "Retain")(obj)
		})
		waitSet(ctx, ns, name, 3, 3)
		bound := boundClaims(ctx, ns, 3)
		Expect(bound).To(HaveKey("data-nginx-0"))
		w := watchSetPods(ctx, ns, name)
		patchSet(ctx, ns, name, types.MergePatchType, `{"spec":{"replicas":1}}`)
		waitSet(ctx, ns, name, 1, 1)
		patchSet(ctx, ns, name, types.MergePatchType, `{"spec":{"replicas":3}}`)
		waitSet(ctx, ns, name, 3, 3)
		Expect(boundClaims(ctx, ns, 3)).To(Equal(bound), "the pods got their claims back")
		w.expect(ctx, ns, 3, 1)
		deleteAndWait(ctx, target{gvr: advancedStatefulSets, namespaced: true, namespace: ns}, name)
		Consistently(func() int { return len(liveClaims(ctx, ns)) }).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(poll).Should(Equal(3))
		claims.expectNoneLost(ctx, ns)
	})

	It("deletes the claims of pods scaled away when whenScaled says Delete, and keeps the others", func(ctx SpecContext) {
		ns := newNamespace(ctx, "asts-delete-")
		for i := range 2 {
			createHostPathPV(ctx, fmt.Sprintf("%s-%d", ns, i))
		}
		name := applySeedSet(ctx, "012-statefulset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			setField(int64(2), "spec", "replicas")(obj)
			withClaimTemplate("Retain", "Delete")(obj)
		})
		waitSet(ctx, ns, name, 2, 2)
		bound := boundClaims(ctx, ns, 2)
		patchSet(ctx, ns, name, types.MergePatchType, `{"spec":{"replicas":1}}`)
		waitSet(ctx, ns, name, 1, 1)
		Eventually(func() []string {
			var names []string
			for n := range liveClaims(ctx, ns) {
				names = append(names, n)
			}
			return names
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(ConsistOf("data-nginx-0"))
		Expect(liveClaims(ctx, ns)["data-nginx-0"].UID).To(Equal(bound["data-nginx-0"]))
	})
})

var _ = Describe("Rollout of an Advanced StatefulSet in batches", Ordered, func() {
	var ns, name string

	BeforeAll(func(ctx SpecContext) {
		ns = newNamespace(ctx, "asts-batches-")
		// The seed's in-place set, at the image it moves away from, with four pods and no partition of its own.
		name = applySeedSet(ctx, "015-statefulset-nginx-a.yaml", ns, func(obj *unstructured.Unstructured) {
			withImage("nginx:latest")(obj)
			setField(int64(4), "spec", "replicas")(obj)
			setField(int64(0), "spec", "updateStrategy", "rollingUpdate", "partition")(obj)
			setField(int64(0), "spec", "updateStrategy", "rollingUpdate", "inPlaceUpdateStrategy", "gracePeriodSeconds")(obj)
		})
		waitSet(ctx, ns, name, 4, 4)
		rollout := inNamespace(seedObject("042-rollout-rollout.yaml"), ns)
		Expect(unstructured.SetNestedStringMap(rollout.Object, map[string]string{
			"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": name}, "spec", "objectRef", "workloadRef")).To(Succeed())
		_, err := applyAndCleanUp(ctx, rollout)
		Expect(err).NotTo(HaveOccurred())
		waitRollout(ctx, ns, rolloutState{Phase: "Healthy", Step: 3, State: "Completed"})
	})

	It("updates one pod, then half, then all, in place, each after an approval", func(ctx SpecContext) {
		before := setPods(ctx, ns, name)
		w := watchSetPods(ctx, ns, name)
		setSetImage(ctx, ns, name, "nginx:alpine")

		By("batch 1: one pod on the new revision")
		waitRollout(ctx, ns, rolloutState{Phase: "Progressing", Step: 1, State: "StepPaused"})
		waitSet(ctx, ns, name, 4, 1)
		Consistently(func() int64 { return readSet(ctx, ns, name).Updated }).WithContext(ctx).
			WithTimeout(3*time.Second).WithPolling(poll).Should(Equal(int64(1)), "nothing moves without an approval")

		By("approving: two pods")
		approveRollout(ctx, ns, seedRollout)
		waitRollout(ctx, ns, rolloutState{Phase: "Progressing", Step: 2, State: "StepPaused"})
		waitSet(ctx, ns, name, 4, 2)

		By("approving again: all four")
		approveRollout(ctx, ns, seedRollout)
		waitRollout(ctx, ns, rolloutState{Phase: "Healthy", Step: 3, State: "Completed"})
		st := waitSet(ctx, ns, name, 4, 4)
		Expect(st.CurrentRevision).To(Equal(st.UpdateRevision))
		w.expect(ctx, ns, 4, 2)
		for i, p := range setPods(ctx, ns, name) {
			Expect(p.UID).To(Equal(before[i].UID), "pods are updated in place")
			Expect(p.Spec.Containers[0].Image).To(Equal("nginx:alpine"))
		}
		obj, err := dyn.Resource(advancedStatefulSets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.GetAnnotations()).NotTo(HaveKey("batchrelease.rollouts.kruise.io/control-info"))
		partition, _, _ := unstructured.NestedInt64(obj.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
		Expect(partition).To(BeZero(), "the release leaves no partition behind")
	})
})
