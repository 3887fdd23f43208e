package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/e2e/framework"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var (
	sidecarSets        = kruiseappsv1alpha1.GroupVersion.WithResource("sidecarsets")
	sidecarSetsV1beta1 = schema.GroupVersionResource{Group: appsGroup, Version: "v1beta1", Resource: "sidecarsets"}
)

// sidecarSetStoryTimeout bounds each wait of the SidecarSet stories.
const sidecarSetStoryTimeout = time.Minute

// applySeedSidecarSet applies a seed SidecarSet restricted to ns (its spec.namespace), so that the app=nginx
// pods of other stories are never its business; the story's cleanup deletes it. It returns once the
// API server sends ns's pods that the set selects through the pod webhook (switched on only while SidecarSets
// exist).
func applySeedSidecarSet(ctx context.Context, file, ns string) {
	GinkgoHelper()
	obj := seedObject(file)
	Expect(unstructured.SetNestedField(obj.Object, ns, "spec", "namespace")).To(Succeed())
	_, err := applyAndCleanUp(ctx, obj)
	Expect(err).NotTo(HaveOccurred(), "applying %s", file)
	waitSidecarSetInjects(ctx, obj)
}

// waitSidecarSetInjects waits until the manager has switched the pod webhook on and the API server calls it
// for the pods of set's namespace that its selector's labels pick.
func waitSidecarSetInjects(ctx context.Context, set *unstructured.Unstructured) {
	GinkgoHelper()
	ns, _, _ := unstructured.NestedString(set.Object, "spec", "namespace")
	labels, _, err := unstructured.NestedStringMap(set.Object, "spec", "selector", "matchLabels")
	Expect(err).NotTo(HaveOccurred())
	Eventually(sidecarSetPodWebhookOn).WithContext(ctx).WithTimeout(sidecarSetStoryTimeout).WithPolling(poll).Should(BeTrue())
	Eventually(func(ctx context.Context) (bool, error) {
		return framework.SidecarSetInjects(ctx, kube, ns, labels)
	}).WithContext(ctx).WithTimeout(sidecarSetStoryTimeout).WithPolling(poll).Should(BeTrue())
}

// sidecarSetPodWebhookOn tells whether the manager calls the pod webhook for every pod.
func sidecarSetPodWebhookOn(ctx context.Context) (bool, error) {
	return framework.SidecarSetPodWebhookOn(ctx, kube)
}

func readSidecarSet(ctx context.Context, name string) (*kruiseappsv1alpha1.SidecarSet, error) {
	obj, err := dyn.Resource(sidecarSets).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	set := &kruiseappsv1alpha1.SidecarSet{}
	return set, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, set)
}

// scsName is the seed's SidecarSet.
const scsName = "scs"

// waitSidecarSetStatus waits until the seed's SidecarSet has observed its spec and shows matched, updated and
// ready pods (updatedReady equal to updated).
func waitSidecarSetStatus(ctx context.Context, matched, updated, ready int32) {
	GinkgoHelper()
	Eventually(func() (string, error) {
		set, err := readSidecarSet(ctx, scsName)
		if err != nil {
			return "", err
		}
		s := set.Status
		if s.ObservedGeneration != set.Generation {
			return fmt.Sprintf("observedGeneration %d of %d", s.ObservedGeneration, set.Generation), nil
		}
		return fmt.Sprintf("matched %d updated %d ready %d updatedReady %d", s.MatchedPods, s.UpdatedPods, s.ReadyPods, s.UpdatedReadyPods), nil
	}).WithContext(ctx).WithTimeout(sidecarSetStoryTimeout).WithPolling(poll).
		Should(Equal(fmt.Sprintf("matched %d updated %d ready %d updatedReady %d", matched, updated, ready, updated)))
}

// createNginxPod creates the seed's nginx pod (app=nginx) in ns, with extra labels.
func createNginxPod(ctx context.Context, ns, name string, labels map[string]string) {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "nginx"}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}},
	}
	for k, v := range labels {
		pod.Labels[k] = v
	}
	_, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// nginxContainer is the image of the nginx pod's container and its restart count.
func nginxContainer(ctx context.Context, ns, container string) (string, int32) {
	GinkgoHelper()
	p, err := kube.CoreV1().Pods(ns).Get(ctx, "nginx", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	image := ""
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			image = c.Image
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container && cs.Image == image {
			return image, cs.RestartCount
		}
	}
	return image, -1 // the kubelet does not run the spec's image yet
}

// patchSidecarImage changes the seed SidecarSet's first image with a JSON patch, as the seed's kubectl patch does.
func patchSidecarImage(ctx context.Context, image string) {
	GinkgoHelper()
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/containers/0/image", "value": image}})
	Expect(err).NotTo(HaveOccurred())
	_, err = dyn.Resource(sidecarSets).Patch(ctx, scsName, types.JSONPatchType, patch, metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// Serial: the seed examples apply SidecarSets of the same names cluster-wide.
var _ = Describe("SidecarSet stories", Serial, func() {
	It("injects the seed's scs sidecar into the nginx pod and upgrades it in place by patch and by apply", func(ctx SpecContext) {
		ns := newNamespace(ctx, "scs-")
		applySeedSidecarSet(ctx, "029-sidecarset-scs.yaml", ns)
		waitSidecarSetStatus(ctx, 0, 0, 0)
		createNginxPod(ctx, ns, "nginx", nil)

		pod, err := kube.CoreV1().Pods(ns).Get(ctx, "nginx", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(containerNames(pod.Spec.Containers)).To(Equal([]string{"scs", "nginx"}), "the sidecar goes before the app")
		Expect(pod.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "IS_INJECTED", Value: "true"}))
		Expect(pod.Spec.Containers[0].VolumeMounts).To(ContainElement(HaveField("MountPath", "/var/log")))
		Expect(pod.Spec.Volumes).To(ContainElement(HaveField("Name", "log")))
		Expect(pod.Annotations).To(HaveKeyWithValue(kruiseappsv1alpha1.SidecarSetListAnnotation, "scs"))
		waitSidecarSetStatus(ctx, 1, 1, 1)

		By("kubectl patch of the image restarts the sidecar once, the app never")
		patchSidecarImage(ctx, "busybox:latest")
		Eventually(func() int32 { _, n := nginxContainer(ctx, ns, "scs"); return n }).WithContext(ctx).
			WithTimeout(sidecarSetStoryTimeout).WithPolling(poll).Should(Equal(int32(1)))
		waitSidecarSetStatus(ctx, 1, 1, 1)

		By("applying the old image back restarts it again: switching back and forth works")
		applySeedSidecarSet(ctx, "029-sidecarset-scs.yaml", ns)
		Eventually(func() string { image, n := nginxContainer(ctx, ns, "scs"); return fmt.Sprint(image, " ", n) }).
			WithContext(ctx).WithTimeout(sidecarSetStoryTimeout).WithPolling(poll).Should(Equal("busybox:1.35.0 2"))
		waitSidecarSetStatus(ctx, 1, 1, 1)
		_, appRestarts := nginxContainer(ctx, ns, "nginx")
		Expect(appRestarts).To(BeZero())
	})

	It("updates only the canary pods a selector picks: 2 of 4", func(ctx SpecContext) {
		ns := newNamespace(ctx, "scs-canary-")
		applySeedSidecarSet(ctx, "029-sidecarset-scs.yaml", ns)
		createNginxPod(ctx, ns, "nginx", map[string]string{"canary.release": "true"})
		_, err := kube.AppsV1().Deployments(ns).Create(ctx, nginxDeployment(ns), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		waitSidecarSetStatus(ctx, 4, 4, 4)
		By("labelling one of the Deployment's pods a canary too, as the seed labels its pod")
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=nginx"})
		Expect(err).NotTo(HaveOccurred())
		canaries := map[string]bool{"nginx": true}
		for _, p := range pods.Items {
			if p.Name != "nginx" && len(canaries) < 2 {
				_, err := kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType,
					[]byte(`{"metadata":{"labels":{"canary.release":"true"}}}`), metav1.PatchOptions{})
				Expect(err).NotTo(HaveOccurred())
				canaries[p.Name] = true
			}
		}

		applySeedSidecarSet(ctx, "032-sidecarset-scs.yaml", ns)
		waitSidecarSetStatus(ctx, 4, 2, 4)
		pods, err = kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=nginx"})
		Expect(err).NotTo(HaveOccurred())
		for _, p := range pods.Items {
			want := "busybox:1.35.0"
			if canaries[p.Name] {
				want = "busybox:1.28.3"
			}
			Expect(p.Spec.Containers[0].Image).To(Equal(want), "pod %s (canary %v)", p.Name, canaries[p.Name])
		}
	})

	It("shares the app's env and volumes with the seed's sidecar", func(ctx SpecContext) {
		ns := newNamespace(ctx, "scs-share-")
		obj := seedObject("030-sidecarset-scs.yaml")
		Expect(unstructured.SetNestedField(obj.Object, ns, "spec", "namespace")).To(Succeed())
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "containers")
		containers[0].(map[string]any)["shareVolumePolicy"] = map[string]any{"type": "enabled"}
		Expect(unstructured.SetNestedSlice(obj.Object, containers, "spec", "containers")).To(Succeed())
		_, err := applyAndCleanUp(ctx, obj)
		Expect(err).NotTo(HaveOccurred())
		waitSidecarSetInjects(ctx, obj)

		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "main", Namespace: ns, Labels: map[string]string{"app": "nginx"}},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{Name: "main", Image: "nginx:latest",
					Env:          []corev1.EnvVar{{Name: "PROXY_IP", Value: "10.0.0.7"}, {Name: "OTHER", Value: "x"}},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
		}
		got, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(containerNames(got.Spec.Containers)).To(Equal([]string{"scs", "main"}))
		sidecar := got.Spec.Containers[0]
		Expect(sidecar.Env).To(ContainElement(corev1.EnvVar{Name: "PROXY_IP", Value: "10.0.0.7"}), "transferEnv")
		Expect(sidecar.Env).NotTo(ContainElement(HaveField("Name", "OTHER")), "only the named env is transferred")
		Expect(sidecar.VolumeMounts).To(ContainElements(HaveField("MountPath", "/var/log"), HaveField("MountPath", "/data")),
			"its own mount and the app's, shared")
		Expect(got.Spec.Volumes).To(ContainElements(HaveField("Name", "log"), HaveField("Name", "data")))
	})

	It("injects a hot-upgrade sidecar as a working and an empty container and upgrades it without a gap", func(ctx SpecContext) {
		ns := newNamespace(ctx, "scs-hot-")
		applySeedSidecarSet(ctx, "033-sidecarset-hotupgrade-sidecarset.yaml", ns)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "busybox", Namespace: ns, Labels: map[string]string{"app": "hotupgrade"}},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{Name: "busybox", Image: "openkruise/hotupgrade-sample:busybox"}}},
		}
		got, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(containerNames(got.Spec.Containers)).To(Equal([]string{"sidecar-1", "sidecar-2", "busybox"}))
		Expect(got.Spec.Containers[0].Image).To(Equal("openkruise/hotupgrade-sample:sidecarv1"))
		Expect(got.Spec.Containers[1].Image).To(Equal("openkruise/hotupgrade-sample:empty"))
		Expect(got.Annotations).To(HaveKeyWithValue(kruiseappsv1alpha1.SidecarSetWorkingHotUpgradeContainerAnnotation, `{"sidecar":"sidecar-1"}`))

		By("the seed's kubectl patch to sidecarv2: sidecar-2 takes over, sidecar-1 goes back to the empty image")
		Eventually(func() bool {
			p, err := kube.CoreV1().Pods(ns).Get(ctx, "busybox", metav1.GetOptions{})
			return err == nil && podReady(*p)
		}).
			WithContext(ctx).WithTimeout(sidecarSetStoryTimeout).WithPolling(poll).Should(BeTrue())
		gaps := watchHotUpgradeGaps(ctx, ns, "busybox", "openkruise/hotupgrade-sample:empty")
		patch := []byte(`[{"op":"replace","path":"/spec/containers/0/image","value":"openkruise/hotupgrade-sample:sidecarv2"}]`)
		_, err = dyn.Resource(sidecarSets).Patch(ctx, "hotupgrade-sidecarset", types.JSONPatchType, patch, metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() ([]string, error) {
			p, err := kube.CoreV1().Pods(ns).Get(ctx, "busybox", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return []string{p.Spec.Containers[0].Image, p.Spec.Containers[1].Image,
				p.Annotations[kruiseappsv1alpha1.SidecarSetWorkingHotUpgradeContainerAnnotation]}, nil
		}).WithContext(ctx).WithTimeout(sidecarSetStoryTimeout).WithPolling(poll).Should(Equal([]string{
			"openkruise/hotupgrade-sample:empty", "openkruise/hotupgrade-sample:sidecarv2", `{"sidecar":"sidecar-2"}`}))
		Expect(gaps()).To(BeZero(), "samples in which no sidecar container ran a real image")
	})

	It("calls the pod webhook for pods no apps.kruise.io workload controls only while SidecarSets exist", func(ctx SpecContext) {
		ns := newNamespace(ctx, "scs-switch-")
		Eventually(sidecarSetPodWebhookOn).WithContext(ctx).WithTimeout(sidecarSetStoryTimeout).WithPolling(poll).Should(BeFalse())
		before := podWebhookCalls(ctx)
		createNginxPod(ctx, ns, "before", nil)
		Expect(podWebhookCalls(ctx)).To(Equal(before), "called without any SidecarSet")

		obj := seedObject("029-sidecarset-scs.yaml")
		Expect(unstructured.SetNestedField(obj.Object, ns, "spec", "namespace")).To(Succeed())
		t, err := targetFor(obj)
		Expect(err).NotTo(HaveOccurred())
		_, err = apply(ctx, t, obj)
		Expect(err).NotTo(HaveOccurred())
		waitSidecarSetInjects(ctx, obj)
		during := podWebhookCalls(ctx) // the probes were calls too
		createNginxPod(ctx, ns, "during", nil)
		Expect(podWebhookCalls(ctx)).To(Equal(during + 1))
		pod, err := kube.CoreV1().Pods(ns).Get(ctx, "during", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(containerNames(pod.Spec.Containers)).To(Equal([]string{"scs", "nginx"}))

		deleteAndWait(ctx, t, obj.GetName())
		Eventually(sidecarSetPodWebhookOn).WithContext(ctx).WithTimeout(sidecarSetStoryTimeout).WithPolling(poll).Should(BeFalse())
	})

	It("serves v1beta1 (upstream 1.9): namespaceSelector and customVersion are v1alpha1's namespace and label", func(ctx SpecContext) {
		ns := newNamespace(ctx, "scs-v1beta1-")
		set := seedObject("029-sidecarset-scs.yaml")
		set.SetAPIVersion(sidecarSetsV1beta1.GroupVersion().String())
		Expect(unstructured.SetNestedField(set.Object, map[string]any{}, "spec", "selector")).To(Succeed())
		_, err := dyn.Resource(sidecarSetsV1beta1).Create(ctx, set, metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring("spec.selector")), "the validating webhook sees v1beta1 objects")

		set = seedObject("029-sidecarset-scs.yaml")
		set.SetAPIVersion(sidecarSetsV1beta1.GroupVersion().String())
		Expect(unstructured.SetNestedStringMap(set.Object, map[string]string{corev1.LabelMetadataName: ns},
			"spec", "namespaceSelector", "matchLabels")).To(Succeed())
		Expect(unstructured.SetNestedField(set.Object, "v2", "spec", "customVersion")).To(Succeed())
		_, err = applyAndCleanUp(ctx, set)
		Expect(err).NotTo(HaveOccurred())
		stored, err := readSidecarSet(ctx, scsName)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.Spec.Namespace).To(Equal(ns), "a selector of the namespace's name is v1alpha1's namespace")
		Expect(stored.Spec.NamespaceSelector).To(BeNil())
		Expect(stored.Labels).To(HaveKeyWithValue(kruiseappsv1alpha1.SidecarSetCustomVersionLabel, "v2"))
		Expect(stored.Spec.RevisionHistoryLimit).To(HaveValue(BeEquivalentTo(10)), "defaulted")

		storedObj, err := dyn.Resource(sidecarSets).Get(ctx, scsName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		waitSidecarSetInjects(ctx, storedObj)
		createNginxPod(ctx, ns, "nginx", nil)
		pod, err := kube.CoreV1().Pods(ns).Get(ctx, "nginx", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(containerNames(pod.Spec.Containers)).To(Equal([]string{"scs", "nginx"}))
		waitSidecarSetStatus(ctx, 1, 1, 1)

		By("a v1beta1 client reads its own form, and its change of customVersion is the label's")
		served, err := dyn.Resource(sidecarSetsV1beta1).Get(ctx, scsName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(served.Object["spec"]).NotTo(HaveKey("namespace"))
		Expect(served.Object["spec"]).To(HaveKeyWithValue("customVersion", "v2"))
		Expect(served.GetLabels()).NotTo(HaveKey(kruiseappsv1alpha1.SidecarSetCustomVersionLabel))
		selector, _, _ := unstructured.NestedStringMap(served.Object, "spec", "namespaceSelector", "matchLabels")
		Expect(selector).To(Equal(map[string]string{corev1.LabelMetadataName: ns}))
		_, err = dyn.Resource(sidecarSetsV1beta1).Patch(ctx, scsName, types.MergePatchType, []byte(`{"spec":{"customVersion":"v3"}}`),
			metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		stored, err = readSidecarSet(ctx, scsName)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.Labels).To(HaveKeyWithValue(kruiseappsv1alpha1.SidecarSetCustomVersionLabel, "v3"))
		Expect(stored.Spec.Namespace).To(Equal(ns))
		Expect(kubectlGet(ctx, "", "sidecarsets.v1beta1.apps.kruise.io", scsName)).To(HaveExactElements(
			MatchRegexp(`^NAME\s+MATCHED\s+UPDATED\s+READY\s+AGE$`), MatchRegexp(`^scs\s+1\s+1\s+1\s+\S+$`)))
	})

	It("refuses a pod whose container clashes with a sidecar, naming it", func(ctx SpecContext) {
		ns := newNamespace(ctx, "scs-clash-")
		applySeedSidecarSet(ctx, "029-sidecarset-scs.yaml", ns)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "clash", Namespace: ns, Labels: map[string]string{"app": "nginx"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "scs", Image: "nginx:latest"}}},
		}
		_, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring(`"scs"`)))
	})
})

// watchHotUpgradeGaps samples the pod's container statuses until the returned function is called, which
// returns how many samples saw neither hot-upgrade container running a real image.
func watchHotUpgradeGaps(ctx context.Context, ns, name, emptyImage string) func() int {
	ctx, cancel := context.WithCancel(ctx)
	gaps := 0
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for ctx.Err() == nil {
			p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			running := 0
			for _, cs := range p.Status.ContainerStatuses {
				if (cs.Name == "sidecar-1" || cs.Name == "sidecar-2") && cs.Image != emptyImage && cs.State.Running != nil {
					running++
				}
			}
			if running == 0 {
				gaps++
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return func() int {
		cancel()
		<-done
		return gaps
	}
}

// nginxDeployment is the seed's canary Deployment: three app=nginx pods.
func nginxDeployment(ns string) *appsv1.Deployment {
	labels := map[string]string{"app": "nginx"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}},
			},
		},
	}
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
