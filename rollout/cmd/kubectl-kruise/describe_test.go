package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func batchPod(name, batch string, ready bool, age time.Duration) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(testNow.Add(-age)), Labels: map[string]string{
			rolloutsv1beta1.RolloutBatchIDLabel: batch, rolloutsv1beta1.ControllerRevisionHashLabelKey: "web-rev2",
		}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Ready: ready, RestartCount: 1}}},
	}
}

func describedCloneSet(t *testing.T) *unstructured.Unstructured {
	return testCloneSet(t, func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Status = kruiseappsv1alpha1.CloneSetStatus{Replicas: 5, UpdatedReplicas: 2, ReadyReplicas: 4, AvailableReplicas: 4}
	})
}

func TestRenderDescribe(t *testing.T) {
	canary := withCondition(atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStatePaused),
		rolloutsv1beta1.RolloutConditionProgressing, "True", "InRolling", "Rollout is in Progressing")
	canary.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"}
	canary.Spec.Strategy.Canary.Steps[1].Traffic = ptr.To("20%")
	canary.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{{
		Service: "web", Ingress: &rolloutsv1beta1.IngressTrafficRouting{ClassType: "nginx", Name: "web"},
	}}
	canary.Status.CanaryStatus.CanaryRevision = "web-rev2"
	canary.Status.Message = "Rollout is in step(2/3), and you need manually confirm to enter the next step"
	blueGreen := atStep(blueGreenRollout(), 1, rolloutsv1beta1.CanaryStepStateUpgrade)
	blueGreen.Generation = 2
	tests := []struct {
		golden string
		view   rolloutView
	}{
		{golden: "describe/canary.golden", view: rolloutView{Rollout: canary, Workload: describedCloneSet(t), Now: testNow,
			Pods: []corev1.Pod{batchPod("web-b", "2", false, 30*time.Second), batchPod("web-a", "1", true, 3*time.Minute)}}},
		{golden: "describe/bluegreen-no-workload.golden", view: rolloutView{Rollout: blueGreen, WorkloadErr: `deployments.apps "web" not found`, Now: testNow}},
		{golden: "describe/healthy-color.golden", view: rolloutView{Rollout: canaryRollout(), Workload: testDeployment(t), Now: testNow, Color: true}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) { checkGolden(t, tt.golden, renderDescribe(tt.view)) })
	}
}

func TestDescribeTemplate(t *testing.T) {
	tmpl := testTemplate()
	tmpl.Annotations = map[string]string{changeCauseAnnotation: "set image"}
	web := &tmpl.Spec.Containers[0]
	web.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	web.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
	web.Env = append(web.Env, corev1.EnvVar{Name: "PASS", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "pass"}}})
	web.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}}
	tmpl.Spec.Volumes = []corev1.Volume{{Name: "data"}}
	checkGolden(t, "describe/template.golden", describeTemplate(tmpl))
}

func TestPodSelector(t *testing.T) {
	ro := atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStatePaused)
	tests := []struct {
		kind *workloadKind
		all  bool
		want string
	}{
		{kind: kindCloneSet, want: "app=web,controller-revision-hash=rev2,rollouts.kruise.io/rollout-batch-id=2"},
		{kind: kindDeployment, want: "app=web,pod-template-hash=rev2,rollouts.kruise.io/rollout-batch-id=2"},
		{kind: kindCloneSet, all: true, want: "app=web"},
	}
	for _, tt := range tests {
		if got := podSelector(tt.kind, ro, "app=web", tt.all); got != tt.want {
			t.Errorf("%s all=%v: %q, want %q", tt.kind.Kind, tt.all, got, tt.want)
		}
	}
	if got := podSelector(kindCloneSet, canaryRollout(), "app=web", false); got != "app=web" {
		t.Errorf("no release: %q", got)
	}
}

func TestDescribeCommandWithoutWorkloadClient(t *testing.T) {
	api := &fakeAPI{script: []*rolloutsv1beta1.Rollout{atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStatePaused)}}
	code, out, errOut := runFake(t, api, "describe", "rollout", "rollout/demo")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	checkGolden(t, "describe/command.golden", out)
	if code, _, errOut := runFake(t, api, "describe", "rollout", "cloneset/web"); code != exitError ||
		errOut != "error: describe rollout describes Rollouts, not \"cloneset\"\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
