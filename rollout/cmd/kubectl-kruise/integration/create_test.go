package integration

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func jobPodTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "run", Image: "busybox:1"}}, RestartPolicy: corev1.RestartPolicyNever,
	}}
}

func createAdvancedCronJob(t *testing.T, ns, name string, broadcast bool) *kruiseappsv1alpha1.AdvancedCronJob {
	t.Helper()
	meta := metav1.ObjectMeta{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}}
	acj := &kruiseappsv1alpha1.AdvancedCronJob{ObjectMeta: objectMeta(ns, name), Spec: kruiseappsv1alpha1.AdvancedCronJobSpec{Schedule: "0 0 * * *"}}
	if broadcast {
		acj.Spec.Template.BroadcastJobTemplate = &kruiseappsv1alpha1.BroadcastJobTemplateSpec{ObjectMeta: meta,
			Spec: kruiseappsv1alpha1.BroadcastJobSpec{Template: jobPodTemplate()}}
	} else {
		acj.Spec.Template.JobTemplate = &batchv1.JobTemplateSpec{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: jobPodTemplate()}}
	}
	create(t, acj)
	return acj
}

func TestCreateJobs(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	jobs := createAdvancedCronJob(t, ns, "nightly", false)
	broadcasts := createAdvancedCronJob(t, ns, "everywhere", true)

	expect(t, 0, "job.batch/once created\n", "", "create", "job", "once", "--image=busybox:1", "-n", ns, "--", "date")
	once := get(t, &batchv1.Job{ObjectMeta: objectMeta(ns, "once")})
	if c := once.Spec.Template.Spec.Containers[0]; c.Image != "busybox:1" || !cmp.Equal(c.Command, []string{"date"}) {
		t.Errorf("container = %+v", c)
	}

	expect(t, 0, "job.batch/manual created\n", "", "create", "job", "manual", "--from=acj/nightly", "-n", ns)
	manual := get(t, &batchv1.Job{ObjectMeta: objectMeta(ns, "manual")})
	wantOwner := []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "AdvancedCronJob", Name: "nightly", UID: jobs.UID}}
	if manual.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" || manual.Labels["team"] != "a" || !cmp.Equal(manual.OwnerReferences, wantOwner) {
		t.Errorf("job metadata = %+v", manual.ObjectMeta)
	}

	expect(t, 0, "broadcastjob.apps.kruise.io/manual created\n", "", "create", "broadcastJob", "manual", "--from=acj/everywhere", "-n", ns)
	bcj := get(t, &kruiseappsv1alpha1.BroadcastJob{ObjectMeta: objectMeta(ns, "manual")})
	if bcj.OwnerReferences[0].UID != broadcasts.UID || bcj.Spec.Template.Spec.Containers[0].Image != "busybox:1" {
		t.Errorf("broadcastJob = %+v", bcj)
	}
	expect(t, 1, "", "error: from must be a broadcastJob template, but advancedcronjob \"nightly\" has a job template\n",
		"create", "broadcastJob", "other", "--from=acj/nightly", "-n", ns)
	expect(t, 0, "job.batch/dry created (server dry run)\n", "", "create", "job", "dry", "--image=busybox:1", "--dry-run=server", "-n", ns)
}

func TestCreateContainerRecreateRequest(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	createPod(t, ns, "pod-1", nil, nil)
	expect(t, 0, "containerrecreaterequest.apps.kruise.io/restart-web created\n", "",
		"create", "ContainerRecreateRequest", "restart-web", "--pod=pod-1", "--containers=web", "-u", "5", "-n", ns)
	crr := get(t, &kruiseappsv1alpha1.ContainerRecreateRequest{ObjectMeta: objectMeta(ns, "restart-web")})
	want := kruiseappsv1alpha1.ContainerRecreateRequestSpec{
		PodName:    "pod-1",
		Containers: []kruiseappsv1alpha1.ContainerRecreateRequestContainer{{Name: "web"}},
		Strategy: &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: "Fail",
			UnreadyGracePeriodSeconds: ptr.To[int64](5), MinStartedSeconds: 3},
		ActiveDeadlineSeconds: ptr.To[int64](300), TTLSecondsAfterFinished: ptr.To[int32](1800),
	}
	if diff := cmp.Diff(want, crr.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	expect(t, 1, "", "error: container \"db\" not found in pod \"pod-1\"\n", "create", "crr", "x", "--pod=pod-1", "--containers=db", "-n", ns)
}
