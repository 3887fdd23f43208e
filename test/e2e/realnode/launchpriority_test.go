package realnode

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/images"
)

// launchOrder are the containers of the ordered pod, in the order they must start.
var launchOrder = []string{"first", "second", "third"}

var _ = Describe("Container launch priority on a real node", func() {
	It("starts an Ordered pod's containers one after another, each once the one before is ready", func(ctx SpecContext) {
		ns := newNamespace(ctx, "launch-")
		w := watchLaunch(ctx, ns)
		pod, err := kube.CoreV1().Pods(ns).Create(ctx, orderedPod(), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.Name).To(HavePrefix("ordered-"), "the webhook named the pod from its generateName")
		for i, c := range pod.Spec.Containers {
			Expect(c.Env).To(ContainElement(HaveField("ValueFrom.ConfigMapKeyRef.Key", "p_"+strconv.Itoa(-i))), c.Name)
		}

		Eventually(func() bool {
			p, err := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			return err == nil && podReady(*p)
		}).WithContext(ctx).WithTimeout(storyTimeout).WithPolling(poll).Should(BeTrue(), func() string { return describePods(ctx, ns) })

		By("no container having run before the one ahead of it was ready")
		Expect(w.violations()).To(BeEmpty())
		pod, err = kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		var prev metav1.Time
		for i, name := range launchOrder {
			s := containerStatus(*pod, name)
			Expect(s).NotTo(BeNil(), name)
			Expect(s.RestartCount).To(BeZero(), name)
			started := s.State.Running.StartedAt
			if i > 0 {
				Expect(started.After(prev.Time)).To(BeTrue(), "%s started at %s, not after %s", name, started, prev)
			}
			prev = started
		}

		By("the barrier holding every key and the pod marked completed")
		Eventually(func() map[string]string {
			p, err := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return nil
			}
			return p.Annotations
		}).WithContext(ctx).WithTimeout(storyTimeout).WithPolling(poll).
			Should(HaveKeyWithValue("apps.kruise.io/container-launch-priority-completed", "true"))
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, pod.Name+"-barrier", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cm.Data).To(Equal(map[string]string{"p_0": "true", "p_-1": "true", "p_-2": "true"}))
		Expect(cm.OwnerReferences).To(ConsistOf(HaveField("UID", pod.UID)))
	})
})

// orderedPod runs the test application three times on the real node, on ports of their own; each container
// is ready two seconds after it starts, no sooner, so that a container started too early shows.
func orderedPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "ordered-", Labels: map[string]string{"app": "launch"},
			Annotations: map[string]string{"apps.kruise.io/container-launch-priority": "Ordered"}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"type": "real"},
			Tolerations:                   []corev1.Toleration{{Key: cluster.RealNodeTaint, Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: ptr.To[int64](podGrace),
		},
	}
	for i, name := range launchOrder {
		port := 8081 + i
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name: name, Image: images.TestAppImage("v1"), ImagePullPolicy: corev1.PullIfNotPresent,
			Env:   []corev1.EnvVar{{Name: "PORT", Value: strconv.Itoa(port)}},
			Ports: []corev1.ContainerPort{{Name: fmt.Sprintf("http-%d", i), ContainerPort: int32(port)}},
			ReadinessProbe: &corev1.Probe{InitialDelaySeconds: 2, PeriodSeconds: 1,
				ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt(port)}}},
		})
	}
	return pod
}

// launchWatch follows the pods of a namespace and notes every status in which a container of launchOrder
// runs while the one before it was never seen ready.
type launchWatch struct {
	mu    sync.Mutex
	ready map[string]bool
	bad   []string
}

func watchLaunch(ctx context.Context, ns string) *launchWatch {
	GinkgoHelper()
	w, err := kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=launch"})
	Expect(err).NotTo(HaveOccurred())
	lw := &launchWatch{ready: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Deleted {
				lw.observe(*pod)
			}
		}
	}()
	DeferCleanup(func() { w.Stop(); <-done })
	return lw
}

func (lw *launchWatch) observe(p corev1.Pod) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	for _, name := range launchOrder {
		if s := containerStatus(p, name); s != nil && s.Ready {
			lw.ready[name] = true
		}
	}
	for i, name := range launchOrder[1:] {
		s := containerStatus(p, name)
		if s != nil && (s.State.Running != nil || s.State.Terminated != nil) && !lw.ready[launchOrder[i]] {
			lw.bad = append(lw.bad, fmt.Sprintf("%s ran (resourceVersion %s) before %s was ready", name, p.ResourceVersion, launchOrder[i]))
		}
	}
}

func (lw *launchWatch) violations() []string {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return append([]string(nil), lw.bad...)
}
