package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

var (
	advancedDaemonSets        = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "daemonsets"}
	advancedDaemonSetsV1beta1 = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "daemonsets"}
)

// workloadModuleWebhooks are the webhooks of the modules besides the engine, which the chart's engineOnly
// leaves out.
var workloadModuleWebhooks = []string{"dcloneset.kb.io", "vcloneset.kb.io", "mpod.kb.io", "ddaemonset.kb.io", "vdaemonset.kb.io",
	"mcontainerrecreaterequest.kb.io", "msidecarset-pod.kb.io", "msidecarset.kb.io", "vsidecarset.kb.io",
	"vnamespace.kb.io", "vservice.kb.io", "vingress.kb.io", "vcustomresourcedefinition.kb.io", "vbuiltindeployment.kb.io",
	"vbuiltinreplicaset.kb.io", "vbuiltinstatefulset.kb.io", "vworkloaddeletion.kb.io", "vdeleteprotectionlabel.kb.io",
	"vpersistentpodstate.kb.io", "vworkloadspread.kb.io", "muniteddeployment.kb.io", "vuniteddeployment.kb.io",
	"vpod.kb.io", "vpodeviction.kb.io", "vpodunavailablebudget.kb.io"}

// upstreamAgent plays upstream OpenKruise's DaemonSet controller for one Advanced DaemonSet beside an engine-only
// manager, as far as the engine reads it: it reports the status of the DaemonSet's current generation over the
// suite's kwok nodes, the update revision being the image tag and the updated pods those labelled with it, and
// runs the pod of each node the test asks for.
type upstreamAgent struct {
	ns   string
	stop context.CancelFunc
	done chan struct{}
}

const agentNodes = 3

func startUpstreamAgent(ctx context.Context, ns string) *upstreamAgent {
	ctx, cancel := context.WithCancel(ctx)
	a := &upstreamAgent{ns: ns, stop: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(a.done)
		for ctx.Err() == nil {
			a.report(ctx)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	DeferCleanup(func() { a.stop(); <-a.done })
	return a
}

// agentRevision is the update revision upstream would hash from the template: here its image tag.
func agentRevision(obj *unstructured.Unstructured) string {
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	image, _ := containers[0].(map[string]any)["image"].(string)
	return image[strings.LastIndex(image, ":")+1:]
}

func (a *upstreamAgent) report(ctx context.Context) {
	obj, err := dyn.Resource(advancedDaemonSets).Namespace(a.ns).Get(ctx, appName, metav1.GetOptions{})
	if err != nil {
		return
	}
	revision := agentRevision(obj)
	pods, err := kube.CoreV1().Pods(a.ns).List(ctx, metav1.ListOptions{LabelSelector: "controller-revision-hash=" + revision})
	if err != nil {
		return
	}
	status := map[string]any{"desiredNumberScheduled": int64(agentNodes), "currentNumberScheduled": int64(agentNodes),
		"numberMisscheduled": int64(0), "numberReady": int64(agentNodes), "numberAvailable": int64(agentNodes),
		"updatedNumberScheduled": int64(len(pods.Items)), "daemonSetHash": revision, "observedGeneration": obj.GetGeneration()}
	if st, _, _ := unstructured.NestedMap(obj.Object, "status"); fmt.Sprint(st) == fmt.Sprint(status) {
		return
	}
	obj.Object["status"] = status
	_, _ = dyn.Resource(advancedDaemonSets).Namespace(a.ns).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
}

// runPod replaces the pod of node i with one of revision.
func (a *upstreamAgent) runPod(ctx context.Context, revision string, i int) {
	GinkgoHelper()
	name := fmt.Sprintf("%s-%d", appName, i)
	err := kube.CoreV1().Pods(a.ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	Eventually(func() bool {
		_, err := kube.CoreV1().Pods(a.ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(BeTrue())
	owner, err := dyn.Resource(advancedDaemonSets).Namespace(a.ns).Get(ctx, appName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": appName, "controller-revision-hash": revision},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet", Name: appName,
				UID: owner.GetUID(), Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: fmt.Sprintf("%s%d", cluster.NodeNamePrefix, i),
			Containers: []corev1.Container{{Name: "app", Image: "example.com/app:" + revision,
				Env: []corev1.EnvVar{{Name: "VERSION", Value: revision}}}}},
	}
	_, err = kube.CoreV1().Pods(a.ns).Create(ctx, pod, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

func agentPartition(ctx context.Context, ns string) any {
	obj, err := dyn.Resource(advancedDaemonSets).Namespace(ns).Get(ctx, appName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	p, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
	return p
}

// Beside an upstream OpenKruise the chart runs only the engine (engineOnly). A Rollout of an Advanced
// DaemonSet there used to be accepted and then do nothing: the workload webhook froze the DaemonSet at
// partition 32767, the Rollout stayed Healthy and no BatchRelease ever released it.
var _ = Describe("Advanced DaemonSets beside upstream OpenKruise", Serial, Ordered, func() {
	var binary string
	var engine *framework.Manager

	BeforeAll(func(ctx SpecContext) {
		binary = manager.Binary
		manager.Stop()
		kubeconfig, err := testCluster.ControllerKubeconfig(ctx)
		failOnError(err, "writing the manager's kubeconfig")
		// As the chart's engineOnly installs it: without the webhooks of the workload modules, which
		// upstream's kruise-manager serves there.
		engine, err = framework.StartManager(ctx, framework.ManagerConfig{
			RestConfig: testCluster.Config(), KubeconfigPath: kubeconfig, WorkDir: GinkgoT().TempDir(), Binary: binary,
			ExtraArgs: []string{"--enable-modules=rollout,analysis"}, WithoutWebhooks: workloadModuleWebhooks,
		})
		failOnError(err, "starting an engine-only flotilla-manager")
	})

	AfterAll(func(ctx SpecContext) {
		if engine != nil {
			engine.Stop()
		}
		workDir, err := os.MkdirTemp("", "flotilla-e2e-")
		failOnError(err, "creating the work directory")
		laterWorkDirs = append(laterWorkDirs, workDir)
		m, err := startManager(ctx, workDir, binary)
		failOnError(err, "restarting the suite's manager")
		manager = m
	})

	It("are released by partition in batches, each after an approval", func(ctx SpecContext) {
		s := &story{ns: newNamespace(ctx, "ads-engine-"), kind: "DaemonSet"}
		ads := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet",
			"metadata": map[string]any{"name": appName, "namespace": s.ns},
			"spec": map[string]any{
				"selector": map[string]any{"matchLabels": map[string]any{"app": appName}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": appName}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "example.com/app:v1"}}}},
				"updateStrategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": int64(1)}},
			},
		}}
		_, err := dyn.Resource(advancedDaemonSets).Namespace(s.ns).Create(ctx, ads, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		upstream := startUpstreamAgent(ctx, s.ns)
		for i := range agentNodes {
			upstream.runPod(ctx, "v1", i)
		}
		s.waitPods(ctx, map[string]int{"v1": agentNodes})
		doc := fmt.Sprintf("apiVersion: rollouts.kruise.io/v1beta1\nkind: Rollout\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n"+
			"  workloadRef:\n    apiVersion: apps.kruise.io/v1alpha1\n    kind: DaemonSet\n    name: %s\n  strategy:\n"+
			"    canary:\n      steps:\n      - replicas: 1\n      - replicas: 2\n      - replicas: 100%%\n", appName, s.ns, appName)
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		_, err = dyn.Resource(rolloutsV1beta1).Namespace(s.ns).Create(ctx, obj, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		s.waitPhase(ctx, "Healthy")
		Eventually(func() map[string]string {
			got, err := dyn.Resource(advancedDaemonSets).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			return got.GetLabels()
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(HaveKeyWithValue("rollouts.kruise.io/workload-type", "daemonset"))

		By("a new image: the webhook freezes the DaemonSet and the release starts")
		patch := `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"example.com/app:v2"}]`
		_, err = dyn.Resource(advancedDaemonSets).Namespace(s.ns).Patch(ctx, appName, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		s.waitStep(ctx, "Progressing 1/StepUpgrade")
		_, err = dyn.Resource(batchReleases).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the release has a BatchRelease")
		Eventually(func() any { return agentPartition(ctx, s.ns) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).
			Should(BeNumerically("==", agentNodes-1), "batch 1 keeps all nodes but one")

		By("upstream's controller updates one node")
		upstream.runPod(ctx, "v2", 0)
		s.waitStep(ctx, "Progressing 1/StepPaused")
		Consistently(func() any { return agentPartition(ctx, s.ns) }).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(poll).
			Should(BeNumerically("==", agentNodes-1), "nothing moves without an approval")

		By("approving: a second node")
		s.approve(ctx)
		Eventually(func() any { return agentPartition(ctx, s.ns) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).
			Should(BeNumerically("==", agentNodes-2))
		upstream.runPod(ctx, "v2", 1)
		s.waitStep(ctx, "Progressing 2/StepPaused")

		By("approving again: every node")
		s.approve(ctx)
		Eventually(func() any { return agentPartition(ctx, s.ns) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).
			Should(Or(BeNil(), BeNumerically("==", 0)))
		upstream.runPod(ctx, "v2", 2)
		s.waitPhase(ctx, "Healthy")
		Expect(s.succeeded(ctx)).To(Equal("True/Success"))
		s.waitPods(ctx, map[string]int{"v2": agentNodes})
		released, err := dyn.Resource(advancedDaemonSets).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, key := range []string{"rollouts.kruise.io/in-progressing", "batchrelease.rollouts.kruise.io/control-info"} {
			Expect(released.GetAnnotations()).NotTo(HaveKey(key))
		}
	})
})
