package rollout

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestPodProblem(t *testing.T) {
	waiting := func(reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
	tests := []struct {
		name string
		pod  corev1.PodStatus
		want string
	}{
		{"ready", corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}, ""},
		{"crash loop", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("CrashLoopBackOff")}}, "(container app: CrashLoopBackOff)"},
		{"image pull", corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{waiting("ImagePullBackOff")}}, "(container app: ImagePullBackOff)"},
		{"creating says nothing", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("ContainerCreating")}}, "(not ready)"},
		{"unschedulable", corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient cpu."}}}, "(Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podProblem(&corev1.Pod{Status: tt.pod}); got != tt.want {
				t.Errorf("podProblem = %q, want %q", got, tt.want)
			}
		})
	}
}

// A binding's runs count only for the release they measure.
func TestAnalysisObsReadsRunsOfTheReleaseOnly(t *testing.T) {
	ra := &analysisv1alpha1.RolloutAnalysis{
		Spec: analysisv1alpha1.RolloutAnalysisSpec{Steps: []analysisv1alpha1.StepAnalysis{{Step: 2}}, OnFailure: analysisv1alpha1.FailureActionPause},
		Status: analysisv1alpha1.RolloutAnalysisStatus{CanaryRevision: "v2", Runs: []analysisv1alpha1.RolloutAnalysisRun{
			{Name: "r", Step: 2, Phase: analysisv1alpha1.AnalysisPhaseFailed}}},
	}
	obs := analysisObs(ra, &rolloutsv1beta1.CommonStatus{PodTemplateHash: "v3"})
	if len(obs.Runs) != 0 || obs.Abort || len(obs.Gated) != 1 {
		t.Errorf("another release's binding: %+v; want step 2 gated, no runs, onFailure Pause", obs)
	}
	obs = analysisObs(ra, &rolloutsv1beta1.CommonStatus{PodTemplateHash: "v2"})
	if obs.Runs[2].Phase != analysisv1alpha1.AnalysisPhaseFailed {
		t.Errorf("this release's runs: %+v", obs.Runs)
	}
}
