package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func testAdvancedCronJob(broadcast bool) *kruiseappsv1alpha1.AdvancedCronJob {
	meta := metav1.ObjectMeta{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}}
	acj := &kruiseappsv1alpha1.AdvancedCronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", UID: "uid-acj"}}
	if broadcast {
		acj.Spec.Template.BroadcastJobTemplate = &kruiseappsv1alpha1.BroadcastJobTemplateSpec{ObjectMeta: meta,
			Spec: kruiseappsv1alpha1.BroadcastJobSpec{Parallelism: ptr.To(intOrPercentValue("2"))}}
	} else {
		acj.Spec.Template.JobTemplate = &batchv1.JobTemplateSpec{ObjectMeta: meta, Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](2)}}
	}
	return acj
}

func TestJobsFromCronJobs(t *testing.T) {
	wantMeta := func(apiVersion, kind, name, uid string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "manual", Labels: map[string]string{"team": "a"},
			Annotations:     map[string]string{"note": "x", instantiateAnnotation: "manual"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: typesUID(uid)}}}
	}
	job, err := jobFromAdvancedCronJob("manual", testAdvancedCronJob(false))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantMeta("apps.kruise.io/v1alpha1", "AdvancedCronJob", "nightly", "uid-acj"), job.ObjectMeta); diff != "" || *job.Spec.BackoffLimit != 2 {
		t.Errorf("job from acj (-want +got):\n%s", diff)
	}
	if _, err := jobFromAdvancedCronJob("manual", testAdvancedCronJob(true)); err == nil || !strings.Contains(err.Error(), "from must be a job template") {
		t.Errorf("error = %v", err)
	}
	bcj, err := broadcastJobFromAdvancedCronJob("manual", testAdvancedCronJob(true))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantMeta("apps.kruise.io/v1alpha1", "AdvancedCronJob", "nightly", "uid-acj"), bcj.ObjectMeta); diff != "" || bcj.Spec.Parallelism == nil {
		t.Errorf("broadcastJob from acj (-want +got):\n%s", diff)
	}
	if _, err := broadcastJobFromAdvancedCronJob("manual", testAdvancedCronJob(false)); err == nil {
		t.Error("a job template made a broadcastJob")
	}
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "cron", UID: "uid-cj"}}
	cj.Spec.JobTemplate = *testAdvancedCronJob(false).Spec.Template.JobTemplate
	if diff := cmp.Diff(wantMeta("batch/v1", "CronJob", "cron", "uid-cj"), jobFromCronJob("manual", cj).ObjectMeta); diff != "" {
		t.Errorf("job from cronjob (-want +got):\n%s", diff)
	}
}

func TestJobFromImage(t *testing.T) {
	job := newJob("once", jobSource{Image: "busybox", Command: []string{"date"}})
	want := corev1.PodSpec{Containers: []corev1.Container{{Name: "once", Image: "busybox", Command: []string{"date"}}}, RestartPolicy: corev1.RestartPolicyNever}
	if diff := cmp.Diff(want, job.Spec.Template.Spec); diff != "" {
		t.Errorf("pod spec (-want +got):\n%s", diff)
	}
	tests := []struct {
		opts    jobOptions
		args    []string
		wantErr string
	}{
		{opts: jobOptions{image: "x"}, args: []string{"a", "date"}},
		{opts: jobOptions{from: "acj/x"}, args: []string{"a"}},
		{opts: jobOptions{image: "x"}, wantErr: "NAME is required"},
		{opts: jobOptions{}, args: []string{"a"}, wantErr: "either --image or --from must be specified"},
		{opts: jobOptions{image: "x", from: "acj/x"}, args: []string{"a"}, wantErr: "either --image or --from must be specified"},
		{opts: jobOptions{from: "acj/x"}, args: []string{"a", "date"}, wantErr: "cannot specify --from and command"},
	}
	for _, tt := range tests {
		_, _, err := tt.opts.source(tt.args)
		if (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
			t.Errorf("%+v %v: error = %v, want %q", tt.opts, tt.args, err, tt.wantErr)
		}
	}
}

func TestParseCronJobRef(t *testing.T) {
	for from, want := range map[string]string{"cronjob/a": "CronJob", "cj/a": "CronJob", "acj/a": "AdvancedCronJob", "AdvancedCronJob/a": "AdvancedCronJob"} {
		if kind, name, err := parseCronJobRef(from); err != nil || kind != want || name != "a" {
			t.Errorf("%s: %s %s %v", from, kind, name, err)
		}
	}
	for _, bad := range []string{"deploy/a", "acj", "acj/"} {
		if _, _, err := parseCronJobRef(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestNewContainerRecreateRequest(t *testing.T) {
	preStop := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain"}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 80}}, Lifecycle: &corev1.Lifecycle{PreStop: preStop}},
		{Name: "sidecar"},
	}}}
	opts := crrOptions{UnreadyGraceSecs: defaultCRRUnreadyGraceSeconds, MinStartedSeconds: defaultCRRMinStartedSeconds}
	crr, err := newContainerRecreateRequest("r", pod, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := kruiseappsv1alpha1.ContainerRecreateRequestSpec{
		PodName: "pod-1",
		Containers: []kruiseappsv1alpha1.ContainerRecreateRequestContainer{
			{Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 80}}, PreStop: &kruiseappsv1alpha1.ProbeHandler{Exec: preStop.Exec}},
			{Name: "sidecar"},
		},
		Strategy:              &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: "Fail", UnreadyGracePeriodSeconds: ptr.To[int64](3), MinStartedSeconds: 3},
		ActiveDeadlineSeconds: ptr.To[int64](300), TTLSecondsAfterFinished: ptr.To[int32](1800),
	}
	if diff := cmp.Diff(want, crr.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	opts.Containers = []string{"sidecar"}
	if crr, err := newContainerRecreateRequest("r", pod, opts); err != nil || len(crr.Spec.Containers) != 1 || crr.Spec.Containers[0].Name != "sidecar" {
		t.Errorf("selected containers: %+v, %v", crr, err)
	}
	opts.Containers = []string{"db"}
	if _, err := newContainerRecreateRequest("r", pod, opts); err == nil || err.Error() != `container "db" not found in pod "pod-1"` {
		t.Errorf("error = %v", err)
	}
}

func typesUID(s string) types.UID { return types.UID(s) }

func intOrPercentValue(s string) intstr.IntOrString { return intstr.Parse(s) }
