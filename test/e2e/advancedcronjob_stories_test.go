package e2e

import (
	"context"
	"regexp"
	"sort"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var (
	advancedCronJobs = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "advancedcronjobs"}
	batchJobs        = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

// The stories run on real time: "@every 10s" (the cron parser upstream uses accepts it) gives a run every ten
// seconds, so that three runs cost half a minute. Minute-long schedules, missed runs, deadlines and time
// zones are the integration tests' (workloads/advancedcronjob/internal/controller), on a fake clock.
const (
	acjEvery   = "@every 10s"
	acjTimeout = 90 * time.Second
)

// childName is <acj>-<unix seconds of the run>.
var childName = regexp.MustCompile(`^acj-(\d{10})$`)

// acjRun is one child of an AdvancedCronJob as the stories check it.
type acjRun struct {
	name        string
	unix        int64
	scheduledAt time.Time
	owner       *metav1.OwnerReference
	finished    string // Complete, Failed or ""
	obj         *unstructured.Unstructured
}

// acjRuns are the scheduled children of kind gvr in ns (not those created by hand), by run time.
func acjRuns(ctx context.Context, ns string, gvr schema.GroupVersionResource) []acjRun {
	GinkgoHelper()
	list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var runs []acjRun
	for i := range list.Items {
		obj := &list.Items[i]
		m := childName.FindStringSubmatch(obj.GetName())
		if m == nil || obj.GetDeletionTimestamp() != nil {
			continue
		}
		unix, _ := strconv.ParseInt(m[1], 10, 64)
		at, _ := time.Parse(time.RFC3339, obj.GetAnnotations()[kruiseappsv1alpha1.ScheduledAtAnnotationKey])
		runs = append(runs, acjRun{name: obj.GetName(), unix: unix, scheduledAt: at, owner: metav1.GetControllerOfNoCopy(obj),
			finished: finishedCondition(obj), obj: obj})
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].unix < runs[j].unix })
	return runs
}

// finishedCondition is the Complete or Failed condition that is True, for Jobs and BroadcastJobs alike.
func finishedCondition(obj *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if (m["type"] == "Complete" || m["type"] == "Failed") && m["status"] == "True" {
			return m["type"].(string)
		}
	}
	return ""
}

func getAdvancedCronJob(ctx context.Context, ns, name string) *kruiseappsv1alpha1.AdvancedCronJob {
	GinkgoHelper()
	u, err := dyn.Resource(advancedCronJobs).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	acj := &kruiseappsv1alpha1.AdvancedCronJob{}
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, acj)).To(Succeed())
	return acj
}

// acjEvents are the notes of the events of a reason about the stories' AdvancedCronJob, acj.
func acjEvents(ctx context.Context, ns, reason string) []string {
	GinkgoHelper()
	list, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "AdvancedCronJob" && e.Regarding.Name == "acj" && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// expectRunsOf checks what the controller is responsible for in every run it created: the name, the
// scheduled-at annotation naming the same second, the controller reference, runs whole periods apart, and a
// status that reports the template's kind and lists only scheduled runs as active.
func expectRunsOf(ctx context.Context, g Gomega, acj *kruiseappsv1alpha1.AdvancedCronJob, gvr schema.GroupVersionResource, kind string) []acjRun {
	runs := acjRuns(ctx, acj.Namespace, gvr)
	for i, r := range runs {
		g.Expect(r.scheduledAt.Unix()).To(Equal(r.unix), "%s scheduled-at", r.name)
		g.Expect(r.owner).NotTo(BeNil(), "%s has no controller", r.name)
		g.Expect(r.owner.UID).To(Equal(acj.UID), "%s controller", r.name)
		if i > 0 {
			g.Expect((r.unix-runs[i-1].unix)%10).To(BeZero(), "runs %s and %s are not whole periods apart", runs[i-1].name, r.name)
		}
	}
	status := getAdvancedCronJob(ctx, acj.Namespace, acj.Name).Status
	g.Expect(status.Type).To(BeEquivalentTo(kind))
	for _, ref := range status.Active {
		g.Expect(ref.Kind).To(Equal(kind))
		g.Expect(ref.Name).To(MatchRegexp(childName.String()))
	}
	return runs
}

var _ = Describe("AdvancedCronJob", func() {
	// Needs the BroadcastJob controller (the broadcastjob module) to run the BroadcastJobs to completion.
	It("runs the seed's BroadcastJob template on schedule: a BroadcastJob per run that runs to completion, the finished ones pruned", func(ctx SpecContext) {
		ns := newNamespace(ctx, "acj-broadcast-")
		obj := seedObject("026-advancedcronjob-acj.yaml")
		obj.SetNamespace(ns)
		Expect(unstructured.SetNestedField(obj.Object, acjEvery, "spec", "schedule")).To(Succeed())
		Expect(unstructured.SetNestedField(obj.Object, int64(1), "spec", "successfulJobsHistoryLimit")).To(Succeed())
		_, err := dyn.Resource(advancedCronJobs).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		acj := getAdvancedCronJob(ctx, ns, "acj")
		By("the webhook's defaults")
		Expect(acj.Spec.ConcurrencyPolicy).To(Equal(kruiseappsv1alpha1.AllowConcurrent))
		Expect(*acj.Spec.Paused).To(BeFalse())
		Expect(*acj.Spec.FailedJobsHistoryLimit).To(BeEquivalentTo(1))

		By("a BroadcastJob per run, with the template's spec")
		var first acjRun
		Eventually(func(g Gomega) {
			runs := expectRunsOf(ctx, g, acj, broadcastJobs, "BroadcastJob")
			g.Expect(runs).NotTo(BeEmpty())
			first = runs[0]
		}).WithContext(ctx).WithTimeout(acjTimeout).WithPolling(poll).Should(Succeed())
		ttl, _, _ := unstructured.NestedInt64(first.obj.Object, "spec", "completionPolicy", "ttlSecondsAfterFinished")
		containers, _, _ := unstructured.NestedSlice(first.obj.Object, "spec", "template", "spec", "containers")
		Expect(ttl).To(BeEquivalentTo(30))
		Expect(containers).To(HaveLen(1))
		Expect(containers[0]).To(HaveKeyWithValue("name", "counter"))

		By("the BroadcastJob controller runs the first run to completion")
		Eventually(func() string {
			u, err := dyn.Resource(broadcastJobs).Namespace(ns).Get(ctx, first.name, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			return finishedCondition(u)
		}).WithContext(ctx).WithTimeout(acjTimeout).WithPolling(poll).Should(Equal("Complete"), "no BroadcastJob controller runs it")

		By("the finished runs beyond the limit go")
		Eventually(func(g Gomega) {
			runs := expectRunsOf(ctx, g, acj, broadcastJobs, "BroadcastJob")
			complete := 0
			for _, r := range runs {
				if r.finished == "Complete" {
					complete++
				}
			}
			g.Expect(complete).To(BeNumerically("<=", 1), "finished runs kept: %v", runs)
			g.Expect(acjEvents(ctx, ns, "SuccessfulDelete")).To(ContainElement("Deleted job " + first.name))
			g.Expect(acjEvents(ctx, ns, "SawCompletedJob")).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(acjTimeout).WithPolling(poll).Should(Succeed())
		status := getAdvancedCronJob(ctx, ns, "acj").Status
		Expect(status.LastScheduleTime).NotTo(BeNil())
		Expect(status.LastScheduleTime.Unix()).To(BeNumerically(">=", first.unix+10))

		By("kubectl kruise create broadcastJob --from=acj/acj: a BroadcastJob that runs, not one of the schedule's")
		out, code := kruise(ctx, binaryOf(ctx, "./rollout/cmd/kubectl-kruise", "kubectl-kruise"), ns, "create", "broadcastJob", "manual", "--from=acj/acj")
		Expect(code).To(Equal(0), "%s", out)
		Eventually(func() string {
			u, err := dyn.Resource(broadcastJobs).Namespace(ns).Get(ctx, "manual", metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			return finishedCondition(u)
		}).WithContext(ctx).WithTimeout(acjTimeout).WithPolling(poll).Should(Equal("Complete"))
		for _, ref := range getAdvancedCronJob(ctx, ns, "acj").Status.Active {
			Expect(ref.Name).NotTo(Equal("manual"))
		}
	})

	It("runs a job template on schedule with kube's Job controller, prunes the history, and leaves a job created from it by hand alone", func(ctx SpecContext) {
		ns := newNamespace(ctx, "acj-job-")
		acj := &kruiseappsv1alpha1.AdvancedCronJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "AdvancedCronJob"},
			ObjectMeta: metav1.ObjectMeta{Name: "acj", Namespace: ns},
			Spec: kruiseappsv1alpha1.AdvancedCronJobSpec{Schedule: acjEvery, ConcurrencyPolicy: kruiseappsv1alpha1.ForbidConcurrent,
				SuccessfulJobsHistoryLimit: new(int32)},
		}
		*acj.Spec.SuccessfulJobsHistoryLimit = 1
		acj.Spec.Template.JobTemplate = &batchJobTemplate
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(acj)
		Expect(err).NotTo(HaveOccurred())
		_, err = dyn.Resource(advancedCronJobs).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: u}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		acj = getAdvancedCronJob(ctx, ns, "acj")

		By("a Job per run, completed by kube's Job controller")
		var first acjRun
		Eventually(func(g Gomega) {
			runs := expectRunsOf(ctx, g, acj, batchJobs, "Job")
			g.Expect(runs).NotTo(BeEmpty())
			first = runs[0]
			g.Expect(first.finished).To(Equal("Complete"))
			g.Expect(first.obj.GetLabels()).To(HaveKeyWithValue("app", "report"))
		}).WithContext(ctx).WithTimeout(acjTimeout).WithPolling(poll).Should(Succeed())
		expectEvents(ctx, func() []string { return acjEvents(ctx, ns, "SuccessfulCreate") }, ContainElement("Created job "+first.name))

		By("kubectl kruise create job --from=acj/acj: a job that runs, not one of the schedule's")
		out, code := kruise(ctx, binaryOf(ctx, "./rollout/cmd/kubectl-kruise", "kubectl-kruise"), ns, "create", "job", "manual", "--from=acj/acj")
		Expect(code).To(Equal(0), "%s", out)
		Eventually(func() string {
			u, err := dyn.Resource(batchJobs).Namespace(ns).Get(ctx, "manual", metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			return finishedCondition(u)
		}).WithContext(ctx).WithTimeout(acjTimeout).WithPolling(poll).Should(Equal("Complete"))

		By("the history limit prunes the earlier runs, never the job made by hand")
		Eventually(func(g Gomega) {
			runs := expectRunsOf(ctx, g, acj, batchJobs, "Job")
			g.Expect(runs).NotTo(BeEmpty())
			g.Expect(runs[0].unix).To(BeNumerically(">", first.unix), "the first run is still there")
			g.Expect(acjEvents(ctx, ns, "SuccessfulDelete")).To(ContainElement("Deleted job " + first.name))
		}).WithContext(ctx).WithTimeout(acjTimeout).WithPolling(poll).Should(Succeed())
		_, err = dyn.Resource(batchJobs).Namespace(ns).Get(ctx, "manual", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the job made by hand is kept")
		for _, ref := range getAdvancedCronJob(ctx, ns, "acj").Status.Active {
			Expect(ref.Name).NotTo(Equal("manual"))
		}
	})

	It("serves v1beta1 (upstream 1.9): refused and run on schedule as v1alpha1, read the same in both", func(ctx SpecContext) {
		ns := newNamespace(ctx, "acj-v1beta1-")
		v1beta1 := schema.GroupVersionResource{Group: appsGroup, Version: "v1beta1", Resource: "advancedcronjobs"}
		acj := map[string]any{
			"apiVersion": appsGroup + "/v1beta1", "kind": "AdvancedCronJob", "metadata": map[string]any{"name": "acj"},
			"spec": map[string]any{"schedule": acjEvery, "timeZone": "Mars/Olympus", "concurrencyPolicy": "Forbid"},
		}
		tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&batchJobTemplate)
		Expect(err).NotTo(HaveOccurred())
		acj["spec"].(map[string]any)["template"] = map[string]any{"jobTemplate": tmpl}
		_, err = dyn.Resource(v1beta1).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: acj}, metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring(`spec.timeZone: Invalid value: "Mars/Olympus"`)), "the validating webhook sees v1beta1 objects")

		delete(acj["spec"].(map[string]any), "timeZone")
		_, err = dyn.Resource(v1beta1).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: acj}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		stored := getAdvancedCronJob(ctx, ns, "acj")
		Eventually(func(g Gomega) {
			runs := expectRunsOf(ctx, g, stored, batchJobs, "Job")
			g.Expect(runs).NotTo(BeEmpty())
			g.Expect(runs[0].finished).To(Equal("Complete"))
		}).WithContext(ctx).WithTimeout(acjTimeout).WithPolling(poll).Should(Succeed())
		served, err := dyn.Resource(v1beta1).Namespace(ns).Get(ctx, "acj", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		alpha, err := dyn.Resource(advancedCronJobs).Namespace(ns).Get(ctx, "acj", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(served.Object["spec"]).To(Equal(alpha.Object["spec"]))
		Expect(alpha.Object["spec"]).To(HaveKeyWithValue("successfulJobsHistoryLimit", int64(3)), "defaulted")
		Expect(served.Object["status"]).To(HaveKeyWithValue("type", "Job"))
	})

	It("refuses an AdvancedCronJob that cannot run, naming the field, and a change to its template", func(ctx SpecContext) {
		ns := newNamespace(ctx, "acj-invalid-")
		obj := seedObject("027-advancedcronjob-acj.yaml")
		obj.SetNamespace(ns)
		Expect(unstructured.SetNestedField(obj.Object, "Mars/Olympus", "spec", "timeZone")).To(Succeed())
		_, err := dyn.Resource(advancedCronJobs).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring(`spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`)))

		obj = seedObject("027-advancedcronjob-acj.yaml")
		obj.SetNamespace(ns)
		_, err = dyn.Resource(advancedCronJobs).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		patch := []byte(`[{"op":"replace","path":"/spec/template/broadcastJobTemplate/spec/template/spec/containers/0/image","value":"busybox:1.36"}]`)
		_, err = dyn.Resource(advancedCronJobs).Namespace(ns).Patch(ctx, "acj", types.JSONPatchType, patch, metav1.PatchOptions{})
		Expect(err).To(MatchError(ContainSubstring("spec: Forbidden: updates to advancedcronjob spec for fields other than")))
	})
})

// batchJobTemplate is a job labelled app=report whose one pod kwok completes.
var batchJobTemplate = batchv1.JobTemplateSpec{
	ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "report"}},
	Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "report", Image: "busybox:latest", Command: []string{"date"}}},
	}}},
}
