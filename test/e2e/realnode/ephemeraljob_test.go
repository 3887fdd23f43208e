package realnode

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/images"
)

var ephemeralJobs = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "ephemeraljobs"}

var _ = Describe("EphemeralJobs on a real node", func() {
	// A Deployment's pods: the manager caches them slim, as it does every native workload's.
	It("runs the job's ephemeral container in each selected pod, and succeeds or fails as the containers exit", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ejob-")
		createDeployment(ctx, ns, 2)
		waitVersions(ctx, ns, map[string]int{"v1": 2})
		before := appPods(ctx, ns)

		By("a job whose container exits 0, one pod at a time")
		uid := createEphemeralJob(ctx, ns, "check", "check", 0, "")
		Expect(waitEphemeralJob(ctx, ns, "check", "Succeeded")).To(Equal(counters{Match: 2, Succeeded: 2}))
		after := appPods(ctx, ns)
		expectSamePods(before, after)
		for _, p := range after {
			s := ephemeralStatus(p, "check")
			Expect(s).NotTo(BeNil(), "pod %s reports the container", p.Name)
			Expect(s.State.Terminated).NotTo(BeNil(), "pod %s: %+v", p.Name, s.State)
			Expect(s.State.Terminated.ExitCode).To(BeZero())
			Expect(s.State.Terminated.Message).To(Equal(fmt.Sprintf("testapp v1: exit 0, KRUISE_EJOB_ID=%s", uid)),
				"the container ran with the job's UID in KRUISE_EJOB_ID")
			Expect(appContainer(p).RestartCount).To(BeZero(), "the app container went on undisturbed")
		}

		By("a job on one pod whose container exits 1")
		createEphemeralJob(ctx, ns, "broken", "broken", 1, "replicas: 1")
		Expect(waitEphemeralJob(ctx, ns, "broken", "Failed")).To(Equal(counters{Match: 1, Failed: 1}))
		failed := 0
		for _, p := range appPods(ctx, ns) {
			if s := ephemeralStatus(p, "broken"); s != nil && s.State.Terminated != nil && s.State.Terminated.ExitCode == 1 {
				failed++
			}
		}
		Expect(failed).To(Equal(1), "one pod ran the failing container")
	})
})

// createDeployment creates a Deployment of testapp v1 named as the story's app.
func createDeployment(ctx context.Context, ns string, replicas int32) {
	GinkgoHelper()
	tmpl := appTemplate("v1")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Template: tmpl,
			Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}},
	}
	_, err := kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// counters are an EphemeralJob's status counters.
type counters struct {
	Match, Succeeded, Failed, Running, Waiting int64
}

// createEphemeralJob creates a job named name selecting the story's pods, whose container named container
// runs testapp v1 and exits with code; extra adds spec fields (YAML). It returns the job's UID.
func createEphemeralJob(ctx context.Context, ns, name, container string, code int, extra string) string {
	GinkgoHelper()
	doc := fmt.Sprintf(`apiVersion: apps.kruise.io/v1alpha1
kind: EphemeralJob
metadata: {name: %s, namespace: %s}
spec:
  selector: {matchLabels: {app: %s}}
  template:
    ephemeralContainers:
    - name: %s
      image: %s
      imagePullPolicy: IfNotPresent
      args: [exit, "%d"]
`, name, ns, app, container, images.TestAppImage("v1"), code)
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
	if extra != "" {
		more := map[string]any{}
		Expect(yaml.Unmarshal([]byte(extra), &more)).To(Succeed())
		for k, v := range more {
			Expect(unstructured.SetNestedField(obj.Object, v, "spec", k)).To(Succeed())
		}
	}
	created, err := dyn.Resource(ephemeralJobs).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return string(created.GetUID())
}

// waitEphemeralJob waits for the job's phase and returns its counters then.
func waitEphemeralJob(ctx context.Context, ns, name, phase string) counters {
	GinkgoHelper()
	var status map[string]any
	Eventually(func() any {
		obj, err := dyn.Resource(ephemeralJobs).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		status, _, _ = unstructured.NestedMap(obj.Object, "status")
		return status["phase"]
	}).WithContext(ctx).WithTimeout(storyTimeout).WithPolling(poll).Should(Equal(phase),
		func() string { return fmt.Sprintf("status %v\n%s", status, describePods(ctx, ns)) })
	n := func(k string) int64 {
		v, _ := status[k].(int64)
		return v
	}
	return counters{Match: n("match"), Succeeded: n("succeeded"), Failed: n("failed"), Running: n("running"), Waiting: n("waiting")}
}

// ephemeralStatus is the pod's status of its ephemeral container name, nil before the kubelet reported one.
func ephemeralStatus(p corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.EphemeralContainerStatuses {
		if p.Status.EphemeralContainerStatuses[i].Name == name {
			return &p.Status.EphemeralContainerStatuses[i]
		}
	}
	return nil
}
