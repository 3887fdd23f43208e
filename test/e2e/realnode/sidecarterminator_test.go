package realnode

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/images"
)

// The suite's manager runs with the SidecarTerminator gate on (installChart).
var _ = Describe("The sidecar terminator on a real node", func() {
	It("stops the sidecar of a Job's pod once its main container exited, and the Job completes", func(ctx SpecContext) {
		ns := newNamespace(ctx, "sidecar-term-")

		By("a Job whose sidecar does not ask to be stopped: its pod keeps running after the main container exited")
		createSidecarJob(ctx, ns, "unmarked", false)
		waitJobPod(ctx, ns, "unmarked", func(p corev1.Pod) bool {
			return terminated(p, "main") != nil && running(p, "sidecar")
		})

		By("a Job whose sidecar sets KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT=true: its sidecar is stopped and the Job completes")
		createSidecarJob(ctx, ns, "marked", true)
		Eventually(func() []batchv1.JobCondition {
			job, err := kube.BatchV1().Jobs(ns).Get(ctx, "marked", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			return job.Status.Conditions
		}).WithContext(ctx).WithTimeout(storyTimeout).WithPolling(poll).Should(ContainElement(And(
			HaveField("Type", batchv1.JobComplete), HaveField("Status", corev1.ConditionTrue))),
			func() string { return describePods(ctx, ns) })
		pod := waitJobPod(ctx, ns, "marked", func(p corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		sidecar := terminated(pod, "sidecar")
		Expect(sidecar).NotTo(BeNil(), "the sidecar was stopped")
		Expect(sidecar.ExitCode).To(BeZero(), "the test app exits 0 on SIGTERM")

		By("the request the terminator made for it, which the node agent executed")
		crr, err := dyn.Resource(crrs).Namespace(ns).Get(ctx, "sidecar-termination-"+string(pod.UID), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(crr.Object["spec"]).To(HaveKeyWithValue("containers", ConsistOf(HaveKeyWithValue("name", "sidecar"))))
		Expect(crr.Object["status"]).To(HaveKeyWithValue("containerRecreateStates",
			ConsistOf(And(HaveKeyWithValue("name", "sidecar"), HaveKeyWithValue("isKilled", true)))))
		Expect(crr.GetOwnerReferences()).To(ConsistOf(HaveField("UID", pod.UID)))

		By("the unmarked Job, whose main container exited before, still running its sidecar")
		unmarked := waitJobPod(ctx, ns, "unmarked", func(corev1.Pod) bool { return true })
		Expect(running(unmarked, "sidecar")).To(BeTrue(), "no one stopped the unmarked sidecar")
		job, err := kube.BatchV1().Jobs(ns).Get(ctx, "unmarked", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(job.Status.Succeeded).To(BeZero())
	})
})

// createSidecarJob creates a Job of one pod on the real node: a main container that exits 0 at once and the
// test app as a long-running sidecar, marked for the terminator or not.
func createSidecarJob(ctx context.Context, ns, name string, marked bool) {
	GinkgoHelper()
	sidecar := corev1.Container{Name: "sidecar", Image: images.TestAppImage("v1"), ImagePullPolicy: corev1.PullIfNotPresent}
	if marked {
		sidecar.Env = []corev1.EnvVar{{Name: "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", Value: "true"}}
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			NodeSelector:                  map[string]string{"type": "real"},
			Tolerations:                   []corev1.Toleration{{Key: cluster.RealNodeTaint, Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: ptr.To[int64](podGrace),
			Containers: []corev1.Container{
				{Name: "main", Image: images.TestAppImage("v1"), ImagePullPolicy: corev1.PullIfNotPresent, Args: []string{"exit", "0"}},
				sidecar,
			},
		}}},
	}
	_, err := kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// waitJobPod waits for the Job's one pod to satisfy cond and returns it.
func waitJobPod(ctx context.Context, ns, job string, cond func(corev1.Pod) bool) corev1.Pod {
	GinkgoHelper()
	var pod corev1.Pod
	Eventually(func() bool {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
		Expect(err).NotTo(HaveOccurred())
		if len(list.Items) != 1 {
			return false
		}
		pod = list.Items[0]
		return cond(pod)
	}).WithContext(ctx).WithTimeout(storyTimeout).WithPolling(poll).Should(BeTrue(), func() string { return describePods(ctx, ns) })
	return pod
}

func terminated(p corev1.Pod, name string) *corev1.ContainerStateTerminated {
	if s := containerStatus(p, name); s != nil {
		return s.State.Terminated
	}
	return nil
}

func running(p corev1.Pod, name string) bool {
	s := containerStatus(p, name)
	return s != nil && s.State.Running != nil
}
