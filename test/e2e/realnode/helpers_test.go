package realnode

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/images"
)

var (
	cloneSets = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}
	rollouts  = schema.GroupVersionResource{Group: "rollouts.kruise.io", Version: "v1beta1", Resource: "rollouts"}
	crrs      = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "containerrecreaterequests"}
)

const (
	// app names every story's CloneSet and is its pods' app label; the container is "app".
	app = "web"
	// podGrace is the pods' terminationGracePeriodSeconds.
	podGrace = 5
	// inPlaceUpdateReady is the readiness gate the CloneSet controller gives its pods.
	inPlaceUpdateReady = "InPlaceUpdateReady"
	storyTimeout       = 3 * time.Minute
)

// newNamespace creates a namespace for one spec and deletes it when the spec ends.
func newNamespace(ctx context.Context, prefix string) string {
	GinkgoHelper()
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}},
		metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(describePods(ctx, ns.Name))
		}
		_ = kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// appTemplate runs the test application of version on the real node: an HTTP readiness probe, a preStop
// handler that leaves a line in /state (an emptyDir, which outlives container restarts), and a short grace
// period. The pull policy is IfNotPresent: a CloneSet defaults its containers to Always, as upstream does,
// and the test images exist only where they were imported.
func appTemplate(version string) corev1.PodTemplateSpec {
	probe := &corev1.Probe{PeriodSeconds: 1,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"type": "real"},
			Tolerations:                   []corev1.Toleration{{Key: cluster.RealNodeTaint, Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: ptr.To[int64](podGrace),
			Containers: []corev1.Container{{
				Name: "app", Image: images.TestAppImage(version), ImagePullPolicy: corev1.PullIfNotPresent,
				Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: probe,
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
					Exec: &corev1.ExecAction{Command: []string{"/testapp", "prestop"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "state", MountPath: "/state"}},
			}},
			Volumes: []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

// createCloneSet creates the story's CloneSet of testapp v1, updated in place where possible.
func createCloneSet(ctx context.Context, ns string, replicas int64) {
	GinkgoHelper()
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr.To(appTemplate("v1")))
	Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"name": app, "namespace": ns},
		"spec": map[string]any{
			"replicas":       replicas,
			"selector":       map[string]any{"matchLabels": map[string]any{"app": app}},
			"updateStrategy": map[string]any{"type": "InPlaceIfPossible"},
			"template":       tmpl,
		},
	}}
	_, err = dyn.Resource(cloneSets).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// setImage changes the CloneSet's container image (a JSON patch: a merge patch would replace the list).
func setImage(ctx context.Context, ns, version string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, images.TestAppImage(version))
	_, err := dyn.Resource(cloneSets).Namespace(ns).Patch(ctx, app, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// podsByVersion counts the app's Ready pods on the real node by the version their container runs; a pod
// not scheduled there yet or whose container is not ready counts as "starting".
func podsByVersion(ctx context.Context, ns string) map[string]int {
	GinkgoHelper()
	counts := map[string]int{}
	for _, p := range appPods(ctx, ns) {
		cs := appContainer(p)
		if p.Spec.NodeName != cluster.RealNodeName {
			counts["starting"]++
			continue
		}
		if cs == nil || !cs.Ready || !podReady(p) {
			counts["starting"]++
			continue
		}
		counts[strings.TrimPrefix(cs.Image, images.TestAppRepository+":")]++
	}
	return counts
}

func waitVersions(ctx context.Context, ns string, want map[string]int) {
	GinkgoHelper()
	Eventually(func() map[string]int { return podsByVersion(ctx, ns) }).WithContext(ctx).WithTimeout(storyTimeout).
		WithPolling(poll).Should(Equal(want), func() string { return describePods(ctx, ns) })
}

// appPods lists the app's pods that are not being deleted, by name.
func appPods(ctx context.Context, ns string) []corev1.Pod {
	GinkgoHelper()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	Expect(err).NotTo(HaveOccurred())
	pods := slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods
}

// appContainer is the status of the pod's app container, nil before the kubelet reported one.
func appContainer(p corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == "app" {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func podReady(p corev1.Pod) bool {
	return conditionStatus(p, string(corev1.PodReady)) == corev1.ConditionTrue
}

func conditionStatus(p corev1.Pod, t string) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if string(c.Type) == t {
			return c.Status
		}
	}
	return ""
}

// answer is what the test application in a pod says at path, read from this host over the node's bridge.
func answer(pod corev1.Pod, path string) string {
	GinkgoHelper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + pod.Status.PodIP + ":8080" + path)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(string(body))
}

// conditionWatch records, per pod, each change of one condition's status, from before a change is made
// until the spec ends.
type conditionWatch struct {
	mu   sync.Mutex
	seen map[string][]corev1.ConditionStatus
}

func watchCondition(ctx context.Context, ns, condition string) *conditionWatch {
	GinkgoHelper()
	w, err := kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	Expect(err).NotTo(HaveOccurred())
	cw := &conditionWatch{seen: map[string][]corev1.ConditionStatus{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Deleted {
				cw.record(pod.Name, conditionStatus(*pod, condition))
			}
		}
	}()
	DeferCleanup(func() { w.Stop(); <-done })
	return cw
}

func (cw *conditionWatch) record(pod string, s corev1.ConditionStatus) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	if h := cw.seen[pod]; len(h) == 0 || h[len(h)-1] != s {
		cw.seen[pod] = append(h, s)
	}
}

// history is the sequence of statuses pod went through.
func (cw *conditionWatch) history(pod string) []corev1.ConditionStatus {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return slices.Clone(cw.seen[pod])
}

// describePods lists the pods of ns with their conditions and container states, and the end of the app
// containers' logs (the API server reads them from the real kubelet).
func describePods(ctx context.Context, ns string) string {
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range list.Items {
		fmt.Fprintf(&b, "pod %s/%s on %q phase %s ip %s uid %s\n", ns, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP, p.UID)
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s\n", c.Type, c.Status, c.Message)
		}
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "  container %s image %s ready %v restarts %d state %+v\n", cs.Name, cs.Image, cs.Ready, cs.RestartCount, cs.State)
			if logs, err := kube.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: cs.Name, TailLines: ptr.To[int64](20)}).DoRaw(ctx); err == nil {
				fmt.Fprintf(&b, "  log:\n%s\n", logs)
			}
		}
	}
	return b.String()
}

func describeFlotillaPods(ctx context.Context) string { return describePods(ctx, flotillaNamespace) }

// containerStatus is the status of the pod's container name, nil when the kubelet reports none.
func containerStatus(p corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}
