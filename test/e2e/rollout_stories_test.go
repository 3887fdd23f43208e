package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

var rolloutsV1beta1 = schema.GroupVersionResource{Group: "rollouts.kruise.io", Version: "v1beta1", Resource: "rollouts"}

// story is one workload under one v1beta1 Rollout, both named "app", in a namespace of its own.
type story struct {
	ns   string
	kind string
}

const appName = "app"

func appLabels() map[string]string { return map[string]string{"app": appName} }

// appTemplate is the app's first version, v1.
func appTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: appLabels()},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "example.com/app:1",
			Env: []corev1.EnvVar{{Name: "VERSION", Value: "v1"}},
		}}},
	}
}

func newStory(ctx context.Context, kind string, replicas int32) *story {
	GinkgoHelper()
	s := &story{ns: newNamespace(ctx, strings.ToLower(kind)+"-"), kind: kind}
	meta := metav1.ObjectMeta{Name: appName, Namespace: s.ns}
	sel := &metav1.LabelSelector{MatchLabels: appLabels()}
	var err error
	apps := kube.AppsV1()
	switch kind {
	case "Deployment":
		_, err = apps.Deployments(s.ns).Create(ctx, &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas), Selector: sel, Template: appTemplate()}}, metav1.CreateOptions{})
	case "StatefulSet":
		_, err = apps.StatefulSets(s.ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas), Selector: sel, Template: appTemplate(),
			PodManagementPolicy: appsv1.ParallelPodManagement}}, metav1.CreateOptions{})
	case "DaemonSet":
		_, err = apps.DaemonSets(s.ns).Create(ctx, &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{
			Selector: sel, Template: appTemplate()}}, metav1.CreateOptions{})
	case "CloneSet":
		err = createCloneSet(ctx, s.ns, replicas)
	}
	Expect(err).NotTo(HaveOccurred())
	return s
}

// createCloneSet creates the app as a CloneSet with the default ReCreate update strategy.
func createCloneSet(ctx context.Context, ns string, replicas int32) error {
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr.To(appTemplate()))
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"name": appName, "namespace": ns},
		"spec": map[string]any{"replicas": int64(replicas), "selector": map[string]any{"matchLabels": map[string]any{"app": appName}},
			"template": tmpl},
	}}
	_, err = dyn.Resource(cloneSets).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

// workloadAPIVersion is the apiVersion of the story's workload kind.
func (s *story) workloadAPIVersion() string {
	switch s.kind {
	case "CloneSet":
		return "apps.kruise.io/v1alpha1"
	case "GameSet":
		return gameSets.GroupVersion().String()
	}
	return "apps/v1"
}

// pods counts the app's live pods by VERSION.
func (s *story) pods(ctx context.Context) map[string]int {
	GinkgoHelper()
	list, err := kube.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + appName})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && podReady(p) {
			out[versionOf(p.Spec.Containers[0])]++
		}
	}
	return out
}

// podsOf lists the app's live pods of a version, ready or not.
func (s *story) podsOf(ctx context.Context, version string) []corev1.Pod {
	GinkgoHelper()
	list, err := kube.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + appName})
	Expect(err).NotTo(HaveOccurred())
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && versionOf(p.Spec.Containers[0]) == version {
			out = append(out, p)
		}
	}
	return out
}

func (s *story) waitPods(ctx context.Context, want map[string]int) {
	GinkgoHelper()
	Eventually(func() map[string]int { return s.pods(ctx) }).
		WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Equal(want))
}

// rollout creates the v1beta1 Rollout from the YAML of its spec.strategy and waits for it to be Healthy.
func (s *story) rollout(ctx context.Context, strategy string) {
	GinkgoHelper()
	s.rolloutNoWait(ctx, strategy)
	s.waitPhase(ctx, "Healthy")
}

// rolloutNoWait creates the v1beta1 Rollout and returns at once, as a script that applies its manifests does.
func (s *story) rolloutNoWait(ctx context.Context, strategy string) {
	GinkgoHelper()
	doc := fmt.Sprintf("apiVersion: rollouts.kruise.io/v1beta1\nkind: Rollout\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  workloadRef:\n    apiVersion: %s\n    kind: %s\n    name: %s\n  strategy:\n%s",
		appName, s.ns, s.workloadAPIVersion(), s.kind, appName, indent(strategy, 4))
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
	_, err := dyn.Resource(rolloutsV1beta1).Namespace(s.ns).Create(ctx, obj, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

func indent(text string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.Trim(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func (s *story) status(ctx context.Context) map[string]any {
	GinkgoHelper()
	obj, err := dyn.Resource(rolloutsV1beta1).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	st, _, _ := unstructured.NestedMap(obj.Object, "status")
	return st
}

func (s *story) step(ctx context.Context) string {
	st := s.status(ctx)
	return fmt.Sprintf("%v %v/%v", st["phase"], st["currentStepIndex"], st["currentStepState"])
}

func (s *story) waitStep(ctx context.Context, want string) {
	GinkgoHelper()
	Eventually(func() string { return s.step(ctx) }).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).
		Should(Equal(want), s.describe)
}

// describe shows the workload, its pods and the release, to explain a failed expectation.
func (s *story) describe() string {
	if s.kind == "Deployment" {
		return s.describeDeployment()
	}
	ctx := context.Background()
	out := ""
	if s.kind == "CloneSet" {
		if obj, err := dyn.Resource(cloneSets).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{}); err == nil {
			spec, _ := json.Marshal(obj.Object["spec"].(map[string]any)["updateStrategy"])
			st, _ := json.Marshal(obj.Object["status"])
			out += fmt.Sprintf("cloneset: updateStrategy=%s annotations=%v\nstatus=%s\n", spec, obj.GetAnnotations(), st)
		}
	}
	if pods, err := kube.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			out += fmt.Sprintf("pod %s: version=%s ready=%v deleting=%v labels=%v\n", p.Name, versionOf(p.Spec.Containers[0]),
				podReady(p), p.DeletionTimestamp != nil, p.Labels)
		}
	}
	return out + releaseStatus(ctx, s.ns)
}

// releaseStatus shows the status of the app's Rollout and BatchRelease, whichever exist.
func releaseStatus(ctx context.Context, ns string) string {
	out := ""
	for _, r := range []schema.GroupVersionResource{rolloutsV1beta1, batchReleases} {
		if obj, err := dyn.Resource(r).Namespace(ns).Get(ctx, appName, metav1.GetOptions{}); err == nil {
			st, _ := json.Marshal(obj.Object["status"])
			out += fmt.Sprintf("%s status: %s\n", r.Resource, st)
		}
	}
	return out
}

func (s *story) waitPhase(ctx context.Context, phase string) {
	GinkgoHelper()
	Eventually(func() any { return s.status(ctx)["phase"] }).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Equal(phase))
}

// succeeded is the Succeeded condition's status and reason.
func (s *story) succeeded(ctx context.Context) string {
	conds, _, _ := unstructured.NestedSlice(s.status(ctx), "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Succeeded" {
			return fmt.Sprintf("%v/%v", m["status"], m["reason"])
		}
	}
	return ""
}

func (s *story) statusPatch(ctx context.Context, patch string) {
	GinkgoHelper()
	_, err := dyn.Resource(rolloutsV1beta1).Namespace(s.ns).Patch(ctx, appName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	Expect(err).NotTo(HaveOccurred())
}

func (s *story) approve(ctx context.Context) {
	s.statusPatch(ctx, `{"status":{"canaryStatus":{"currentStepState":"StepReady"}}}`)
}

func (s *story) specPatch(ctx context.Context, patch string) {
	GinkgoHelper()
	_, err := dyn.Resource(rolloutsV1beta1).Namespace(s.ns).Patch(ctx, appName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// setVersion changes the workload's pod template the way `kubectl set env` does.
func (s *story) setVersion(ctx context.Context, version string) {
	GinkgoHelper()
	patch := []byte(fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"VERSION","value":%q}]}]}}}}`, version))
	apps := kube.AppsV1()
	var err error
	switch s.kind {
	case "Deployment":
		_, err = apps.Deployments(s.ns).Patch(ctx, appName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	case "StatefulSet":
		_, err = apps.StatefulSets(s.ns).Patch(ctx, appName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	case "DaemonSet":
		_, err = apps.DaemonSets(s.ns).Patch(ctx, appName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	case "CloneSet":
		// Custom resources take no strategic merge patch: the JSON patch replaces the container's env.
		env := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/env","value":[{"name":"VERSION","value":%q}]}]`, version)
		_, err = dyn.Resource(cloneSets).Namespace(s.ns).Patch(ctx, appName, types.JSONPatchType, []byte(env), metav1.PatchOptions{})
	case "GameSet":
		env := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/env","value":[{"name":"VERSION","value":%q}]}]`, version)
		_, err = dyn.Resource(gameSets).Namespace(s.ns).Patch(ctx, appName, types.JSONPatchType, []byte(env), metav1.PatchOptions{})
	}
	Expect(err).NotTo(HaveOccurred())
}

// describeDeployment shows the Deployment and its ReplicaSets, to explain a failed expectation.
func (s *story) describeDeployment() string {
	ctx := context.Background()
	d, err := kube.AppsV1().Deployments(s.ns).Get(ctx, appName, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	out := fmt.Sprintf("deployment: paused=%v strategy=%s generation=%d observed=%d labels=%v annotations=%v\n",
		d.Spec.Paused, d.Spec.Strategy.Type, d.Generation, d.Status.ObservedGeneration, d.Labels, d.Annotations)
	rss, err := kube.AppsV1().ReplicaSets(s.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out + err.Error()
	}
	for _, rs := range rss.Items {
		out += fmt.Sprintf("replicaset %s: replicas=%d ready=%d version=%s annotations=%v\n", rs.Name, ptr.Deref(rs.Spec.Replicas, 0),
			rs.Status.ReadyReplicas, versionOf(rs.Spec.Template.Spec.Containers[0]), rs.Annotations)
	}
	st, _ := json.Marshal(s.status(ctx))
	out += "rollout status: " + string(st) + "\n"
	if evs, err := kube.EventsV1().Events(s.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			out += fmt.Sprintf("event %s %s/%s %s: %s\n", e.CreationTimestamp.Format("15:04:05"), e.Regarding.Kind, e.Regarding.Name, e.Reason, e.Note)
		}
	}
	return out
}

// expectReleased checks that nothing of the release is left on the workload.
func (s *story) expectReleased(ctx context.Context) {
	GinkgoHelper()
	var meta metav1.ObjectMeta
	switch s.kind {
	case "Deployment":
		Eventually(func(g Gomega) {
			d, err := kube.AppsV1().Deployments(s.ns).Get(ctx, appName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Spec.Paused).To(BeFalse())
			g.Expect(d.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
			meta = d.ObjectMeta
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
	case "StatefulSet":
		sts, err := kube.AppsV1().StatefulSets(s.ns).Get(ctx, appName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ptr.Deref(sts.Spec.UpdateStrategy.RollingUpdate.Partition, 0)).To(BeZero())
		meta = sts.ObjectMeta
	case "DaemonSet":
		ds, err := kube.AppsV1().DaemonSets(s.ns).Get(ctx, appName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ds.Spec.UpdateStrategy.Type).To(Equal(appsv1.RollingUpdateDaemonSetStrategyType))
		meta = ds.ObjectMeta
	case "CloneSet":
		meta = s.expectCloneSetReleased(ctx)
	}
	for _, key := range []string{"rollouts.kruise.io/in-progressing", "batchrelease.rollouts.kruise.io/control-info"} {
		Expect(meta.Annotations).NotTo(HaveKey(key))
	}
}

// expectCloneSetReleased checks the CloneSet's strategy is its own again: no partition, pause, surge or
// inflated minReadySeconds left by a release.
func (s *story) expectCloneSetReleased(ctx context.Context) metav1.ObjectMeta {
	GinkgoHelper()
	obj, err := dyn.Resource(cloneSets).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	strategy, _, _ := unstructured.NestedMap(obj.Object, "spec", "updateStrategy")
	Expect(strategy["partition"]).To(BeElementOf(nil, int64(0)), "the defaulting webhook's partition 0 holds nothing back")
	Expect(strategy["paused"]).NotTo(Equal(true))
	Expect(strategy["maxSurge"]).To(BeElementOf(nil, "0%", int64(0)))
	minReady, _, _ := unstructured.NestedInt64(obj.Object, "spec", "minReadySeconds")
	Expect(minReady).To(BeZero())
	Expect(obj.GetAnnotations()).NotTo(HaveKey("rollouts.kruise.io/original-deployment-strategy"))
	return metav1.ObjectMeta{Annotations: obj.GetAnnotations()}
}

var _ = Describe("Rollout stories", func() {
	It("runs a canary Deployment with an extra workload and removes it at the end", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  enableExtraWorkloadForCanary: true\n  steps:\n  - replicas: 1\n  - replicas: 100%")
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 4, "v2": 1})
		list, err := kube.AppsV1().Deployments(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "rollouts.kruise.io/canary-deployment=" + appName})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(HaveLen(1))
		Expect(list.Items[0].Name).To(HavePrefix(appName + "-"))
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
		Expect(s.succeeded(ctx)).To(Equal("True/Success"))
		s.expectReleased(ctx)
		Eventually(func() []appsv1.Deployment {
			l, _ := kube.AppsV1().Deployments(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "rollouts.kruise.io/canary-deployment=" + appName})
			return l.Items
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeEmpty())
	})

	It("moves a native StatefulSet's partition batch by batch without pauses", func(ctx SpecContext) {
		s := newStory(ctx, "StatefulSet", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n    pause: {duration: 0}\n  - replicas: 50%\n    pause: {duration: 0}\n  - replicas: 100%")
		s.setVersion(ctx, "v2")
		// Without pauses the release may be over between two polls, and Healthy is also the phase before it
		// starts: wait for the Succeeded condition, which only the end of a release writes.
		Eventually(func() string { return s.succeeded(ctx) }).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).
			Should(Equal("True/Success"))
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
		s.expectReleased(ctx)
	})

	It("replaces a native DaemonSet's pods batch by batch", func(ctx SpecContext) {
		s := newStory(ctx, "DaemonSet", 0)
		s.waitPods(ctx, map[string]int{"v1": 3})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 100%")
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 2, "v2": 1})
		Consistently(func() map[string]int { return s.pods(ctx) }).WithContext(ctx).WithTimeout(2 * time.Second).Should(Equal(map[string]int{"v1": 2, "v2": 1}))
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 3})
		s.expectReleased(ctx)
	})

	It("rolls back at once when the old template comes back mid-release", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 100%")
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.setVersion(ctx, "v1")
		s.waitPhase(ctx, "Healthy")
		Expect(s.succeeded(ctx)).To(Equal("False/Rollback"))
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.expectReleased(ctx)
	})

	DescribeTable("rolls back through the steps with rollouts.kruise.io/rollback-in-batch", func(ctx SpecContext, kind string) {
		s := newStory(ctx, kind, 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 50%\n  - replicas: 100%")
		s.specPatch(ctx, `{"metadata":{"annotations":{"rollouts.kruise.io/rollback-in-batch":"true"}}}`)
		w := watchAppPods(ctx, s.ns)
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.approve(ctx)
		s.waitStep(ctx, "Progressing 2/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 2, "v2": 2})
		forward, err := dyn.Resource(batchReleases).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(forward.GetAnnotations()).NotTo(HaveKey("rollouts.kruise.io/rollback-in-batch"), "only a rollback's release is marked")

		By("reverting the template: the two v2 pods go back one step at a time")
		s.setVersion(ctx, "v1")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 3, "v2": 1})
		Consistently(func() map[string]int { return s.pods(ctx) }).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(poll).
			Should(Equal(map[string]int{"v1": 3, "v2": 1}), "step 1 of the rollback waits for approval")
		br, err := dyn.Resource(batchReleases).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		noNeed, _, _ := unstructured.NestedInt64(br.Object, "status", "canaryStatus", "noNeedUpdateReplicas")
		Expect(noNeed).To(Equal(int64(2)), "the pods still on v1 are left out of the batches")
		Expect(br.GetAnnotations()).To(HaveKeyWithValue("rollouts.kruise.io/rollback-in-batch", "true"))

		s.approve(ctx)
		s.waitStep(ctx, "Progressing 2/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 3, "v2": 1})
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v1": 4})
		Expect(s.succeeded(ctx)).To(Equal("True/Success"))
		s.expectReleased(ctx)
		w.expect(ctx, s.ns, 4, 3)
	},
		Entry("a CloneSet", "CloneSet"),
		Entry("a StatefulSet", "StatefulSet"),
	)

	It("restarts from the first step when a newer version arrives mid-release", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 50%\n  - replicas: 100%")
		w := watchAppPods(ctx, s.ns)
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.approve(ctx)
		s.waitStep(ctx, "Progressing 2/StepPaused")
		s.setVersion(ctx, "v3")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		Eventually(func() int { return s.pods(ctx)["v3"] }).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(1), s.describeDeployment)
		Consistently(func() int { return s.pods(ctx)["v3"] }).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(poll).
			Should(Equal(1), "step 1 of the restarted release holds one v3 pod until approved")
		s.approve(ctx)
		s.waitStep(ctx, "Progressing 2/StepPaused")
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v3": 4})
		s.expectReleased(ctx)
		w.expect(ctx, s.ns, 5, 3)
	})

	It("holds while spec.strategy.paused is set and continues on resume", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n    pause: {duration: 0}\n  - replicas: 100%")
		s.specPatch(ctx, `{"spec":{"strategy":{"paused":true}}}`)
		s.setVersion(ctx, "v2")
		Eventually(func() any { return s.status(ctx)["message"] }).WithContext(ctx).WithTimeout(time.Minute).
			Should(Equal("Rollout has been paused, you can resume it by kube-cli"))
		Consistently(func() int { return s.pods(ctx)["v2"] }).WithContext(ctx).WithTimeout(2 * time.Second).Should(BeNumerically("<=", 1))
		s.specPatch(ctx, `{"spec":{"strategy":{"paused":false}}}`)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
	})

	It("runs a blue-green Deployment: new pods beside the old ones until the last approval", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "blueGreen:\n  steps:\n  - replicas: 50%\n  - replicas: 100%")
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 4, "v2": 2})
		s.statusPatch(ctx, `{"status":{"blueGreenStatus":{"currentStepState":"StepReady"}}}`)
		s.waitStep(ctx, "Progressing 2/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 4, "v2": 4})
		s.statusPatch(ctx, `{"status":{"blueGreenStatus":{"currentStepState":"StepReady"}}}`)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
		Expect(s.succeeded(ctx)).To(Equal("True/Success"))
		s.expectReleased(ctx)
	})

	It("runs a blue-green CloneSet: surge pods that never count as available until the last approval", func(ctx SpecContext) {
		s := newStory(ctx, "CloneSet", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "blueGreen:\n  steps:\n  - replicas: 50%\n  - replicas: 100%")
		w := watchAppPods(ctx, s.ns)
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 4, "v2": 2})
		Consistently(func() map[string]int { return s.pods(ctx) }).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(poll).
			Should(Equal(map[string]int{"v1": 4, "v2": 2}), "the old pods stay while the step waits")
		s.statusPatch(ctx, `{"status":{"blueGreenStatus":{"currentStepState":"StepReady"}}}`)
		s.waitStep(ctx, "Progressing 2/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 4, "v2": 4})
		s.statusPatch(ctx, `{"status":{"blueGreenStatus":{"currentStepState":"StepReady"}}}`)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
		Expect(s.succeeded(ctx)).To(Equal("True/Success"))
		s.expectReleased(ctx)
		w.expect(ctx, s.ns, 8, 0)
	})

	It("sizes percentage batches by the workload's current replicas when it scales mid-release", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 50%\n  - replicas: 100%")
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 2, "v2": 2})
		By("scaling to 8 through the scale subresource, as an HPA does")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			scale, err := kube.AppsV1().Deployments(s.ns).GetScale(ctx, appName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			scale.Spec.Replicas = 8
			_, err = kube.AppsV1().Deployments(s.ns).UpdateScale(ctx, appName, scale, metav1.UpdateOptions{})
			return err
		})).To(Succeed())
		s.waitPods(ctx, map[string]int{"v1": 4, "v2": 4})
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 8})
	})

	It("lets failureThreshold excuse pods that do not become ready", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  enableExtraWorkloadForCanary: true\n  failureThreshold: 50%\n  steps:\n  - replicas: 2\n  - replicas: 100%")
		By("releasing a version whose pods wait on a readiness gate")
		s.setGatedVersion(ctx, "v2")
		Eventually(func() int { return len(s.podsOf(ctx, "v2")) }).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(2))
		Consistently(func() string { return s.step(ctx) }).WithContext(ctx).WithTimeout(3*time.Second).
			Should(Equal("Progressing 1/StepUpgrade"), "no new pod is ready, and the threshold never excuses them all")
		obj, err := dyn.Resource(rolloutsV1beta1).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		res, err := kstatus.Compute(obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Status).To(Equal(kstatus.InProgressStatus), "kstatus sees a rolling Rollout as in progress")
		By("one of the two new pods becoming ready")
		s.warm(ctx, s.podsOf(ctx, "v2")[0])
		s.waitStep(ctx, "Progressing 1/StepPaused")
	})

	It("jumps to the step written to nextStepIndex", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 50%\n  - replicas: 100%")
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.statusPatch(ctx, `{"status":{"canaryStatus":{"nextStepIndex":3}}}`)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
	})

	DescribeTable("releases the workload when the Rollout goes away mid-release",
		func(ctx SpecContext, end func(context.Context, *story), phase string) {
			s := newStory(ctx, "Deployment", 4)
			s.waitPods(ctx, map[string]int{"v1": 4})
			s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 100%")
			s.setVersion(ctx, "v2")
			s.waitStep(ctx, "Progressing 1/StepPaused")
			end(ctx, s)
			if phase != "" {
				s.waitPhase(ctx, phase)
			} else {
				expectGone(ctx, target{gvr: rolloutsV1beta1, namespaced: true, namespace: s.ns}, appName)
			}
			s.expectReleased(ctx)
			s.waitPods(ctx, map[string]int{"v2": 4})
		},
		Entry("disabled", func(ctx context.Context, s *story) { s.specPatch(ctx, `{"spec":{"disabled":true}}`) }, "Disabled"),
		Entry("deleted", func(ctx context.Context, s *story) {
			Expect(dyn.Resource(rolloutsV1beta1).Namespace(s.ns).Delete(ctx, appName, metav1.DeleteOptions{})).To(Succeed())
		}, ""),
	)

	It("rejects an invalid Rollout with a message naming the field", func(ctx SpecContext) {
		ns := newNamespace(ctx, "invalid-")
		doc := "apiVersion: rollouts.kruise.io/v1beta1\nkind: Rollout\nmetadata:\n  name: bad\nspec:\n  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: app}\n  strategy:\n    canary:\n      steps:\n      - replicas: 5\n      - replicas: 2\n"
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		_, err := dyn.Resource(rolloutsV1beta1).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring("spec.strategy.canary.steps[1].replicas")))
	})
})
