package containermeta

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
)

func colorPod(color string, updating bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"color": color}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Env: []corev1.EnvVar{{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['color']"}}}}},
			{Name: "sidecar"},
		}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://old"}}},
	}
	if updating {
		p.Status.Conditions = []corev1.PodCondition{{Type: kruiseappspub.InPlaceUpdateReady, Status: corev1.ConditionFalse}}
	}
	return p
}

func TestNewest(t *testing.T) {
	got := Newest([]cri.Container{
		{ID: "a0", Name: "app", Attempt: 0, State: cri.StateExited},
		{ID: "a1", Name: "app", Attempt: 1, State: cri.StateRunning},
		{ID: "s2", Name: "sidecar", Attempt: 2, State: cri.StateExited},
	})
	if len(got) != 1 || got["app"].ID != "a1" {
		t.Fatalf("Newest = %+v, want only the running app container a1", got)
	}
}

func TestPlanPod(t *testing.T) {
	blueEnv := inplaceupdate.RunningEnvHash(&colorPod("", false).Spec.Containers[0], []byte("COLOR=blue\n"))
	app := func(id string, hash uint64) Running {
		return Running{Container: cri.Container{ID: id, Name: "app", Attempt: 1, State: cri.StateRunning,
			Annotations: map[string]string{kubeletHashKey: "1a2b", cri.AnnotationRestartCount: "3"}}, EnvHash: hash}
	}
	sidecar := Running{Container: cri.Container{ID: "side", Name: "sidecar", State: cri.StateRunning}}
	cases := []struct {
		name        string
		pod         *corev1.Pod
		running     map[string]Running
		wantRestart []string
	}{
		{"current values: nothing to restart", colorPod("blue", true), map[string]Running{"app": app("old", blueEnv), "sidecar": sidecar}, nil},
		{"stale values while updating in place: restart", colorPod("green", true), map[string]Running{"app": app("old", blueEnv), "sidecar": sidecar}, []string{"old"}},
		{"stale values, not updating: left alone", colorPod("green", false), map[string]Running{"app": app("old", blueEnv)}, nil},
		{"values unknown: left alone", colorPod("green", true), map[string]Running{"app": app("old", 0)}, nil},
		{"a new image on its way: the kubelet restarts it", withImage(colorPod("green", true), "app:2", "app:1"), map[string]Running{"app": app("old", blueEnv)}, nil},
		{"the new image runs: restart for the values", withImage(colorPod("green", true), "app:2", "app:2"), map[string]Running{"app": app("old", blueEnv)}, []string{"old"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := PlanPod(c.pod, c.running, "cri")
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range p.Restart {
				ids = append(ids, r.ID)
			}
			if len(ids) != len(c.wantRestart) || (len(ids) > 0 && ids[0] != c.wantRestart[0]) {
				t.Errorf("restart %v, want %v", ids, c.wantRestart)
			}
		})
	}
}

func TestPlanPodReport(t *testing.T) {
	pod := colorPod("blue", false)
	running := map[string]Running{
		"app":     {Container: cri.Container{ID: "old", Name: "app", Annotations: map[string]string{kubeletHashKey: "1a2b", cri.AnnotationRestartCount: "3"}}, EnvHash: 7},
		"sidecar": {Container: cri.Container{ID: "side", Name: "sidecar", Attempt: 2}},
	}
	p, err := PlanPod(pod, running, "cri")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"containers":[` +
		`{"name":"app","containerID":"containerd://old","restartCount":3,"hashes":{"plainHash":6699,"plainHashWithoutResources":0,"extractedEnvFromMetadataHash":7}},` +
		`{"name":"sidecar","containerID":"cri://side","restartCount":2,"hashes":{"plainHash":0,"plainHashWithoutResources":0}}]}`
	if p.Meta != want {
		t.Fatalf("report\n%s\nwant\n%s", p.Meta, want)
	}
	pod.Annotations = map[string]string{kruiseappspub.RuntimeContainerMetaKey: want}
	if again, _ := PlanPod(pod, running, "cri"); again.Meta != "" {
		t.Errorf("a current report is written again: %s", again.Meta)
	}
	var set kruiseappspub.RuntimeContainerMetaSet
	if err := json.Unmarshal([]byte(want), &set); err != nil || len(set.Containers) != 2 {
		t.Errorf("the report does not read back: %v %+v", err, set)
	}
}

// withImage sets the app container's image in the spec and in the status.
func withImage(p *corev1.Pod, spec, status string) *corev1.Pod {
	p.Spec.Containers[0].Image = spec
	p.Status.ContainerStatuses[0].Image = status
	return p
}
