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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var cloneSets = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}

// seedCloneSet is the name of every seed CloneSet.
const seedCloneSet = "nginx"

// seedRevision is the controller-revision-hash upstream gave the seed document's first CloneSet
// (`controller-revision-hash=nginx-56bb68c858` in its `kubectl describe pod`): Flotilla must compute the same
// one, or every pod upstream created would look outdated after a switch.
const seedRevision = "nginx-56bb68c858"

// applySeedCloneSet applies a seed CloneSet into ns, with changes to its spec.
func applySeedCloneSet(ctx context.Context, file, ns string, change func(obj *unstructured.Unstructured)) {
	GinkgoHelper()
	obj := seedObject(file)
	obj.SetNamespace(ns)
	if change != nil {
		change(obj)
	}
	ensureNamespace(ctx, ns)
	_, err := apply(ctx, target{gvr: cloneSets, namespaced: true, namespace: ns}, obj)
	Expect(err).NotTo(HaveOccurred())
}

// setCloneSetImage changes the first container's image (a JSON patch: a merge patch would replace the
// whole container list).
func setCloneSetImage(ctx context.Context, ns, image string) {
	const name = seedCloneSet
	GinkgoHelper()
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, image)
	_, err := dyn.Resource(cloneSets).Namespace(ns).Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

func patchCloneSet(ctx context.Context, ns, patch string) {
	const name = seedCloneSet
	GinkgoHelper()
	_, err := dyn.Resource(cloneSets).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// cloneSetStatus is what kubectl's printer columns, Argo CD's health check and kubectl-kruise read.
type cloneSetStatus struct {
	Generation, ObservedGeneration                                  int64
	Replicas, Ready, Available, Updated, UpdatedReady, UpdatedAvail int64
	ExpectedUpdated                                                 int64
	UpdateRevision, CurrentRevision                                 string
}

func readCloneSet(ctx context.Context, ns string) cloneSetStatus {
	const name = seedCloneSet
	GinkgoHelper()
	obj, err := dyn.Resource(cloneSets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	n := func(f string) int64 { v, _, _ := unstructured.NestedInt64(obj.Object, "status", f); return v }
	s := func(f string) string { v, _, _ := unstructured.NestedString(obj.Object, "status", f); return v }
	return cloneSetStatus{Generation: obj.GetGeneration(), ObservedGeneration: n("observedGeneration"),
		Replicas: n("replicas"), Ready: n("readyReplicas"), Available: n("availableReplicas"), Updated: n("updatedReplicas"),
		UpdatedReady: n("updatedReadyReplicas"), UpdatedAvail: n("updatedAvailableReplicas"), ExpectedUpdated: n("expectedUpdatedReplicas"),
		UpdateRevision: s("updateRevision"), CurrentRevision: s("currentRevision")}
}

// waitCloneSet waits until the CloneSet at its current generation has replicas pods, all available, and
// updated of them on the update revision.
func waitCloneSet(ctx context.Context, ns string, replicas, updated int64) cloneSetStatus {
	const name = seedCloneSet
	GinkgoHelper()
	var got cloneSetStatus
	Eventually(func() bool {
		got = readCloneSet(ctx, ns)
		return got.ObservedGeneration == got.Generation && got.Replicas == replicas && got.Available == replicas &&
			got.UpdatedAvail == updated && len(activePods(ctx, ns)) == int(replicas)
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).Should(BeTrue(),
		func() string {
			return fmt.Sprintf("CloneSet %s/%s: %+v\n%s", ns, name, got, describePods(ns, "app="+name))
		})
	return got
}

// activePods lists the seed CloneSet's pods that are not being deleted, by name.
func activePods(ctx context.Context, ns string) []corev1.Pod {
	const selector = "app=" + seedCloneSet
	GinkgoHelper()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
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

// cloneSetEvents returns the notes of the CloneSet's events with reason.
func cloneSetEvents(ctx context.Context, ns, reason string) []string {
	const name = seedCloneSet
	GinkgoHelper()
	list, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "CloneSet" && e.Regarding.Name == name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

var _ = Describe("CloneSet stories", func() {
	It("creates the seed CloneSet with upstream's labels, revision hash, gates and events", func(ctx SpecContext) {
		const ns = "e2e-cs-create"
		w := watchPods(ctx, ns)
		applySeedCloneSet(ctx, "001-cloneset-nginx.yaml", ns, nil)
		st := waitCloneSet(ctx, ns, 1, 1)
		w.expect(ctx, ns, 1, 0)
		Expect(st.UpdateRevision).To(Equal(seedRevision))
		Expect(st.CurrentRevision).To(Equal(seedRevision))
		pod := activePods(ctx, ns)[0]
		id := pod.Labels["apps.kruise.io/cloneset-instance-id"]
		Expect(pod.Name).To(Equal("nginx-" + id))
		Expect(pod.Labels).To(HaveKeyWithValue("controller-revision-hash", seedRevision))
		Expect(pod.Labels).To(HaveKeyWithValue("pod-template-hash", strings.TrimPrefix(seedRevision, "nginx-")))
		Expect(pod.Labels).To(HaveKeyWithValue("lifecycle.apps.kruise.io/state", "Normal"))
		Expect(metav1.GetControllerOf(&pod).Kind).To(Equal("CloneSet"))
		var gates []corev1.PodConditionType
		for _, g := range pod.Spec.ReadinessGates {
			gates = append(gates, g.ConditionType)
		}
		Expect(gates).To(ConsistOf(corev1.PodConditionType("InPlaceUpdateReady"), corev1.PodConditionType("KruisePodReady")))
		expectEvents(ctx, func() []string { return cloneSetEvents(ctx, ns, "SuccessfulCreate") }, ConsistOf("succeed to create pod "+pod.Name))
		cr, err := kube.AppsV1().ControllerRevisions(ns).Get(ctx, seedRevision, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(metav1.GetControllerOf(cr).Name).To(Equal("nginx"))
	})

	It("calls the pod webhook only for apps.kruise.io pods that lack the KruisePodReady gate", func(ctx SpecContext) {
		var ns string
		expectPodWebhookCalls(ctx, 0, "asked about the CloneSet's own pod or a pod no workload controls", func(int) {
			ns = newNamespace(ctx, "e2e-cs-pod-webhook-")
			applySeedCloneSet(ctx, "001-cloneset-nginx.yaml", ns, nil)
			waitCloneSet(ctx, ns, 1, 1)
			plain := createBarePod(ctx, ns, "plain", nil)
			Expect(plain.Spec.ReadinessGates).To(BeEmpty())
		})

		cs, err := target{gvr: cloneSets, namespaced: true, namespace: ns}.client().Get(ctx, seedCloneSet, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		expectPodWebhookCalls(ctx, 1, "asked once about a pod the CloneSet did not create", func(attempt int) {
			foreign := createBarePod(ctx, ns, fmt.Sprintf("foreign-%d", attempt), &metav1.OwnerReference{
				APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: cs.GetName(), UID: cs.GetUID(), Controller: new(true),
			})
			Expect(foreign.Spec.ReadinessGates).To(ConsistOf(corev1.PodReadinessGate{ConditionType: "KruisePodReady"}))
		})
	})

	It("scales up one pod at a time with minReadySeconds and scaleStrategy.maxUnavailable, then deletes the named pod", func(ctx SpecContext) {
		const ns = "e2e-cs-scale"
		const minReady = 3
		applySeedCloneSet(ctx, "001-cloneset-nginx.yaml", ns, nil)
		waitCloneSet(ctx, ns, 1, 1)
		w := watchPods(ctx, ns)
		patchCloneSet(ctx, ns, fmt.Sprintf(`{"spec":{"minReadySeconds":%d,"scaleStrategy":{"maxUnavailable":1}}}`, minReady))
		By("scaling through the scale subresource, as kubectl scale and an HPA do")
		_, err := dyn.Resource(cloneSets).Namespace(ns).Patch(ctx, seedCloneSet, types.MergePatchType,
			[]byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{}, "scale")
		Expect(err).NotTo(HaveOccurred())
		waitCloneSet(ctx, ns, 5, 5)
		scale, err := dyn.Resource(cloneSets).Namespace(ns).Get(ctx, seedCloneSet, metav1.GetOptions{}, "scale")
		Expect(err).NotTo(HaveOccurred())
		Expect(scale.Object["status"]).To(HaveKeyWithValue("selector", "app=nginx"))
		Expect(scale.Object["status"]).To(HaveKeyWithValue("replicas", BeNumerically("==", 5)))
		pods := activePods(ctx, ns)
		created := make([]time.Time, 0, len(pods))
		for _, p := range pods {
			created = append(created, p.CreationTimestamp.Time)
		}
		slices.SortFunc(created, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(created); i++ {
			// Creation times are whole seconds: a gap of minReadySeconds may show as one second less.
			Expect(created[i].Sub(created[i-1])).To(BeNumerically(">=", (minReady-1)*time.Second),
				"pods %d and %d were created %v apart", i-1, i, created[i].Sub(created[i-1]))
		}
		expectEvents(ctx, func() []string { return cloneSetEvents(ctx, ns, "ScaleUpLimited") }, ContainElement(
			"scaleUp is limited because of scaleStrategy.maxUnavailable, limit: 0"))

		victim := pods[2].Name
		patchCloneSet(ctx, ns, fmt.Sprintf(`{"spec":{"replicas":4,"scaleStrategy":{"podsToDelete":[%q]}}}`, victim))
		waitCloneSet(ctx, ns, 4, 4)
		var left []string
		for _, p := range activePods(ctx, ns) {
			left = append(left, p.Name)
		}
		var want []string
		for _, p := range pods {
			if p.Name != victim {
				want = append(want, p.Name)
			}
		}
		Expect(left).To(Equal(want))
		// The manager stores events in the background: the deletion may be seen before its event.
		Eventually(func() []string { return cloneSetEvents(ctx, ns, "SuccessfulDelete") }).WithContext(ctx).
			WithTimeout(30 * time.Second).WithPolling(poll).Should(ConsistOf("succeed to delete pod " + victim))
		w.expect(ctx, ns, 5, 1)
	})

	It("keeps each instance's claim: reused by the replacement of a deleted pod, deleted on scale-down", func(ctx SpecContext) {
		const ns = "e2e-cs-claims"
		for i := range 3 {
			createHostPathPV(ctx, fmt.Sprintf("e2e-cs-claims-%d", i))
		}
		applySeedCloneSet(ctx, "004-cloneset-nginx.yaml", ns, nil)
		waitCloneSet(ctx, ns, 3, 3)
		claims := boundClaims(ctx, ns, 3)
		w := watchPods(ctx, ns)
		pods := activePods(ctx, ns)
		for _, p := range pods {
			id := p.Labels["apps.kruise.io/cloneset-instance-id"]
			Expect(claims).To(HaveKey("data-nginx-" + id))
		}
		gone := pods[0]
		Expect(kube.CoreV1().Pods(ns).Delete(ctx, gone.Name, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() types.UID {
			p, err := kube.CoreV1().Pods(ns).Get(ctx, gone.Name, metav1.GetOptions{})
			if err != nil {
				return ""
			}
			return p.UID
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).ShouldNot(Or(BeEmpty(), Equal(gone.UID)),
			"a replacement named %s (same instance id)", gone.Name)
		waitCloneSet(ctx, ns, 3, 3)
		Expect(boundClaims(ctx, ns, 3)).To(Equal(claims), "the replacement must reuse the claim, not a new one")

		patchCloneSet(ctx, ns, `{"spec":{"replicas":2}}`)
		waitCloneSet(ctx, ns, 2, 2)
		Eventually(func() int { return len(liveClaims(ctx, ns)) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Equal(2))
		w.expect(ctx, ns, 3, 2, gone.UID)
	})

	It("accounts for every pod of a large scale-down, past the ten deletions its events name", func(ctx SpecContext) {
		const ns = "e2e-cs-scaledown"
		applySeedCloneSet(ctx, "001-cloneset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(obj.Object, int64(16), "spec", "replicas")).To(Succeed())
		})
		waitCloneSet(ctx, ns, 16, 16)
		w := watchPods(ctx, ns)
		patchCloneSet(ctx, ns, `{"spec":{"replicas":2}}`)
		waitCloneSet(ctx, ns, 2, 2)
		// The events fold past ten, so not every deleted pod is named; the invariant counts the rest.
		Expect(len(cloneSetEvents(ctx, ns, "SuccessfulDelete"))).To(BeNumerically("<", 14))
		w.expect(ctx, ns, 16, 2)
	})

	It("updates 3 pods in place: same names, UIDs and nodes, one restart each, never more than one unavailable", func(ctx SpecContext) {
		const ns = "e2e-cs-inplace"
		applySeedCloneSet(ctx, "005-cloneset-nginx.yaml", ns, nil)
		waitCloneSet(ctx, ns, 3, 3)
		before := activePods(ctx, ns)
		w := watchPods(ctx, ns)
		setCloneSetImage(ctx, ns, "nginx:alpine")
		Eventually(func() string { return readCloneSet(ctx, ns).UpdateRevision }).WithContext(ctx).WithPolling(poll).
			ShouldNot(Equal(seedRevisionOf(before)))
		st := waitCloneSet(ctx, ns, 3, 3)
		w.expect(ctx, ns, 3, 2) // maxUnavailable 20% of 3 rounds up to 1
		after := activePods(ctx, ns)
		Expect(after).To(HaveLen(3))
		for i, p := range after {
			Expect(p.Name).To(Equal(before[i].Name))
			Expect(p.UID).To(Equal(before[i].UID))
			Expect(p.Spec.NodeName).To(Equal(before[i].Spec.NodeName))
			Expect(p.Spec.Containers[0].Image).To(Equal("nginx:alpine"))
			Expect(p.Status.ContainerStatuses[0].RestartCount).To(Equal(before[i].Status.ContainerStatuses[0].RestartCount + 1))
			Expect(p.Labels).To(HaveKeyWithValue("controller-revision-hash", st.UpdateRevision))
		}
		expectEvents(ctx, func() []string { return cloneSetEvents(ctx, ns, "SuccessfulUpdatePodInPlace") }, ConsistOf(
			fmt.Sprintf("successfully update pod %s in-place(revision %s)", before[0].Name, st.UpdateRevision),
			fmt.Sprintf("successfully update pod %s in-place(revision %s)", before[1].Name, st.UpdateRevision),
			fmt.Sprintf("successfully update pod %s in-place(revision %s)", before[2].Name, st.UpdateRevision)))
	})

	It("keeps two old pods with partition 2 of 4", func(ctx SpecContext) {
		const ns = "e2e-cs-partition"
		applySeedCloneSet(ctx, "007-cloneset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(obj.Object, []any{map[string]any{"name": "nginx", "image": "nginx:alpine",
				"ports": []any{map[string]any{"name": "http", "containerPort": int64(80)}}}}, "spec", "template", "spec", "containers")).To(Succeed())
		})
		waitCloneSet(ctx, ns, 4, 4)
		before := activePods(ctx, ns)
		w := watchPods(ctx, ns)
		setCloneSetImage(ctx, ns, "nginx:latest")
		st := waitCloneSet(ctx, ns, 4, 2)
		Expect(st.ExpectedUpdated).To(Equal(int64(2)))
		images := map[string]int{}
		for _, p := range activePods(ctx, ns) {
			images[p.Spec.Containers[0].Image]++
		}
		Expect(images).To(Equal(map[string]int{"nginx:alpine": 2, "nginx:latest": 2}))
		Expect(activePods(ctx, ns)).To(HaveLen(len(before)))
		for i, p := range activePods(ctx, ns) {
			Expect(p.UID).To(Equal(before[i].UID), "pods are updated in place")
		}
		Consistently(func() int64 { return readCloneSet(ctx, ns).Updated }).WithContext(ctx).
			WithTimeout(2 * time.Second).WithPolling(poll).Should(Equal(int64(2)))
		w.expect(ctx, ns, 4, 3)
	})
})

// seedRevisionOf is the revision the pods run (they all run one).
func seedRevisionOf(pods []corev1.Pod) string { return pods[0].Labels["controller-revision-hash"] }

func createHostPathPV(ctx context.Context, name string) {
	GinkgoHelper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
		},
	}
	_, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) { _ = kube.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}) })
}

func liveClaims(ctx context.Context, ns string) map[string]corev1.PersistentVolumeClaim {
	GinkgoHelper()
	list, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, c := range list.Items {
		if c.DeletionTimestamp == nil {
			out[c.Name] = c
		}
	}
	return out
}

// boundClaims waits for n bound claims and returns their UIDs by name.
func boundClaims(ctx context.Context, ns string, n int) map[string]types.UID {
	GinkgoHelper()
	var out map[string]types.UID
	Eventually(func() int {
		out = map[string]types.UID{}
		for name, c := range liveClaims(ctx, ns) {
			if c.Status.Phase == corev1.ClaimBound {
				out[name] = c.UID
			}
		}
		return len(out)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Equal(n))
	return out
}

var _ = Describe("Rollout of a CloneSet in batches", Ordered, func() {
	var ns string

	BeforeAll(func(ctx SpecContext) {
		ns = newNamespace(ctx, "cs-batches-")
		applySeedCloneSet(ctx, "005-cloneset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(obj.Object, int64(4), "spec", "replicas")).To(Succeed())
		})
		waitCloneSet(ctx, ns, 4, 4)
		rollout := inNamespace(seedObject("042-rollout-rollout.yaml"), ns)
		Expect(unstructured.SetNestedStringMap(rollout.Object, map[string]string{
			"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "nginx"}, "spec", "objectRef", "workloadRef")).To(Succeed())
		_, err := applyAndCleanUp(ctx, rollout)
		Expect(err).NotTo(HaveOccurred())
		waitRollout(ctx, ns, rolloutState{Phase: "Healthy", Step: 3, State: "Completed"})
	})

	It("updates one pod, then half, then all, in place, each after an approval", func(ctx SpecContext) {
		before := activePods(ctx, ns)
		w := watchPods(ctx, ns)
		setCloneSetImage(ctx, ns, "nginx:alpine")

		By("batch 1: one pod on the new revision")
		waitRollout(ctx, ns, rolloutState{Phase: "Progressing", Step: 1, State: "StepPaused"})
		waitCloneSet(ctx, ns, 4, 1)
		Consistently(func() int64 { return readCloneSet(ctx, ns).Updated }).WithContext(ctx).
			WithTimeout(3*time.Second).WithPolling(poll).Should(Equal(int64(1)), "nothing moves without an approval")

		By("approving: two pods")
		approveRollout(ctx, ns, seedRollout)
		waitRollout(ctx, ns, rolloutState{Phase: "Progressing", Step: 2, State: "StepPaused"})
		waitCloneSet(ctx, ns, 4, 2)

		By("approving again: all four")
		approveRollout(ctx, ns, seedRollout)
		waitRollout(ctx, ns, rolloutState{Phase: "Healthy", Step: 3, State: "Completed"})
		st := waitCloneSet(ctx, ns, 4, 4)
		Expect(st.CurrentRevision).To(Equal(st.UpdateRevision))
		w.expect(ctx, ns, 4, 3)
		for i, p := range activePods(ctx, ns) {
			Expect(p.UID).To(Equal(before[i].UID), "pods are updated in place")
			Expect(p.Spec.Containers[0].Image).To(Equal("nginx:alpine"))
		}
		obj, err := dyn.Resource(cloneSets).Namespace(ns).Get(ctx, "nginx", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.GetAnnotations()).NotTo(HaveKey("batchrelease.rollouts.kruise.io/control-info"))
		partition, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "updateStrategy", "partition")
		Expect(!found || partition == int64(0)).To(BeTrue(), "the release leaves no partition behind, got %v", partition)
	})
})

// hookOperator plays the seed document's lifecycle operator: it takes a pod preparing an in-place update out
// of service (flips the in-place hook label to "false") and puts an updated, ready pod back (flips it to
// "true"). It records every lifecycle state it saw per pod.
type hookOperator struct {
	mu   sync.Mutex
	seen map[string][]string
	stop context.CancelFunc
	done chan struct{}
}

const inPlaceHook = "example.com/unready-blocker-inplace"

func runHookOperator(ctx context.Context, ns string) *hookOperator {
	ctx, cancel := context.WithCancel(ctx)
	o := &hookOperator{seen: map[string][]string{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(o.done)
		for ctx.Err() == nil {
			list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + seedCloneSet})
			if err == nil {
				for i := range list.Items {
					o.handle(ctx, ns, &list.Items[i])
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return o
}

func (o *hookOperator) handle(ctx context.Context, ns string, p *corev1.Pod) {
	state := p.Labels["lifecycle.apps.kruise.io/state"]
	o.mu.Lock()
	if s := o.seen[p.Name]; len(s) == 0 || s[len(s)-1] != state {
		o.seen[p.Name] = append(s, state)
	}
	o.mu.Unlock()
	flip := ""
	switch {
	case state == "PreparingUpdate" && p.Labels[inPlaceHook] == "true":
		flip = "false" // unregister from service discovery, then let the update go
	case state == "Updated" && p.Labels[inPlaceHook] == "false" && podReady(*p):
		flip = "true" // register again
	}
	if flip != "" {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, inPlaceHook, flip)
		_, _ = kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
}

// settled reports whether the operator's latest look at every pod found it in the Normal state: it looks
// every 50 ms, so it may not have seen the last transition yet when the test has.
func (o *hookOperator) settled(pods []corev1.Pod) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range pods {
		if s := o.seen[p.Name]; len(s) == 0 || s[len(s)-1] != "Normal" {
			return false
		}
	}
	return true
}

func (o *hookOperator) states() map[string][]string {
	o.stop()
	<-o.done
	return o.seen
}

var _ = Describe("CloneSet lifecycle hooks", func() {
	It("holds each in-place update until the seed's operator lets it go, and waits for it to re-register the pod", func(ctx SpecContext) {
		ns := newNamespace(ctx, "cs-hooks-")
		applySeedCloneSet(ctx, "005-cloneset-nginx.yaml", ns, func(obj *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringMap(obj.Object, map[string]string{inPlaceHook: "true"},
				"spec", "lifecycle", "inPlaceUpdate", "labelsHandler")).To(Succeed())
			Expect(unstructured.SetNestedStringMap(obj.Object, map[string]string{"app": seedCloneSet, inPlaceHook: "true"},
				"spec", "template", "metadata", "labels")).To(Succeed())
		})
		waitCloneSet(ctx, ns, 3, 3)
		before := activePods(ctx, ns)
		w := watchPods(ctx, ns)
		op := runHookOperator(ctx, ns)
		setCloneSetImage(ctx, ns, "nginx:alpine")
		Eventually(func() bool {
			st := readCloneSet(ctx, ns)
			pods := activePods(ctx, ns)
			normal := 0
			for _, p := range pods {
				if p.Labels["lifecycle.apps.kruise.io/state"] == "Normal" && p.Labels[inPlaceHook] == "true" {
					normal++
				}
			}
			return st.UpdatedAvail == 3 && st.ObservedGeneration == st.Generation && normal == 3
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).Should(BeTrue(), "every pod updated and back to Normal")
		Eventually(func() bool { return op.settled(activePods(ctx, ns)) }).WithContext(ctx).WithTimeout(10*time.Second).
			WithPolling(poll).Should(BeTrue(), "the operator seeing every pod Normal again")
		seen := op.states()
		for i, p := range activePods(ctx, ns) {
			Expect(p.UID).To(Equal(before[i].UID))
			Expect(seen[p.Name]).To(ContainElements("PreparingUpdate", "Updated"), "states of %s", p.Name)
			Expect(seen[p.Name][len(seen[p.Name])-1]).To(Equal("Normal"))
			Expect(slices.Index(seen[p.Name], "PreparingUpdate")).To(BeNumerically("<", slices.Index(seen[p.Name], "Updated")))
		}
		w.expect(ctx, ns, 3, 2)
	})
})

// createBarePod creates a pod the way another controller would, with owner as its controller reference.
func createBarePod(ctx context.Context, ns, name string, owner *metav1.OwnerReference) *corev1.Pod {
	GinkgoHelper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bare"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:alpine"}}},
	}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	got, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return got
}

// podWebhookCalls is how many admission requests the manager's pod webhook has answered.
func podWebhookCalls(ctx context.Context) int {
	GinkgoHelper()
	return managerCounter(ctx, "controller_runtime_webhook_requests_total{", `webhook="/mutate-pod"`)
}

// expectPodWebhookCalls runs act, up to three times, until the manager answered want /mutate-pod requests
// while it ran. The counter is the manager's: a pod another spec's workload creates meanwhile counts too, but
// a request about the pods act creates shows on every attempt.
func expectPodWebhookCalls(ctx context.Context, want int, why string, act func(attempt int)) {
	GinkgoHelper()
	var got []int
	for attempt := range 3 {
		before := podWebhookCalls(ctx)
		act(attempt)
		n := podWebhookCalls(ctx) - before
		if n == want {
			return
		}
		got = append(got, n)
	}
	Fail(fmt.Sprintf("%s: %v /mutate-pod requests in three attempts, want %d each", why, got, want))
}

// managerCounter sums the manager's metric lines that start with prefix and contain labels.
func managerCounter(ctx context.Context, prefix, labels string) int {
	GinkgoHelper()
	total := 0
	for _, line := range strings.Split(scrape(ctx, "http://"+manager.MetricsAddr+"/metrics"), "\n") {
		if !strings.HasPrefix(line, prefix) || !strings.Contains(line, labels) {
			continue
		}
		var n int
		_, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &n)
		Expect(err).NotTo(HaveOccurred(), line)
		total += n
	}
	return total
}
