package inplaceupdate

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

var colorContainer = corev1.Container{Name: "app", Env: []corev1.EnvVar{
	{Name: "PLAIN", Value: "x"},
	fieldEnv("COLOR", "metadata.labels['color']"),
	fieldEnv("OWNER", `metadata.annotations["team/owner"]`),
	fieldEnv("NODE", "spec.nodeName"),
}}

func TestMetadataKey(t *testing.T) {
	cases := []struct {
		path, kind, key string
		ok              bool
	}{
		{"metadata.labels['app']", "labels", "app", true},
		{`metadata.annotations["a.b/c"]`, "annotations", "a.b/c", true},
		{"metadata.labels", "", "", false},
		{"metadata.labels['app\"]", "", "", false},
		{"metadata.name", "", "", false},
		{"spec.nodeName", "", "", false},
	}
	for _, c := range cases {
		kind, key, ok := metadataKey(c.path)
		if kind != c.kind || key != c.key || ok != c.ok {
			t.Errorf("metadataKey(%q) = %q, %q, %v; want %q, %q, %v", c.path, kind, key, ok, c.kind, c.key, c.ok)
		}
	}
}

func TestEnvHashes(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Labels: map[string]string{"color": "green"}, Annotations: map[string]string{"team/owner": "web"},
	}}
	want := ExpectedEnvHash(pod, &colorContainer)
	if want == 0 {
		t.Fatal("a container reading metadata hashes to 0")
	}
	cases := []struct {
		name  string
		env   string
		equal bool
	}{
		{"the same values, other vars around, CRLF", "PATH=/bin\r\nCOLOR=green\r\nOWNER=web\r\nNODE=n1\r\n", true},
		{"a stale label", "COLOR=blue\nOWNER=web\n", false},
		{"a value with '='", "COLOR=green=1\nOWNER=web\n", false},
		{"a missing var", "COLOR=green\n", false},
	}
	for _, c := range cases {
		if got := RunningEnvHash(&colorContainer, []byte(c.env)) == want; got != c.equal {
			t.Errorf("%s: running hash equal to expected = %v, want %v", c.name, got, c.equal)
		}
	}
	plain := &corev1.Container{Name: "plain", Env: []corev1.EnvVar{{Name: "A", Value: "b"}, fieldEnv("NODE", "spec.nodeName")}}
	if ExpectedEnvHash(pod, plain) != 0 || RunningEnvHash(plain, []byte("A=b\n")) != 0 || ReadsMetadata(plain) {
		t.Error("a container reading no metadata has an env hash")
	}
	unlabelled := &corev1.Pod{}
	if ExpectedEnvHash(unlabelled, &colorContainer) != RunningEnvHash(&colorContainer, []byte("COLOR=\nOWNER=\n")) {
		t.Error("missing metadata does not hash like the empty values the kubelet sets")
	}
}

func TestCompletedWaitsForEnvRestart(t *testing.T) {
	pod := func(meta *kruiseappspub.RuntimeContainerMetaSet, statusID string) *corev1.Pod {
		state, _ := json.Marshal(kruiseappspub.InPlaceUpdateState{Revision: "r2", UpdateEnvFromMetadata: true})
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Labels:      map[string]string{"color": "green"},
				Annotations: map[string]string{kruiseappspub.InPlaceUpdateStateKey: string(state), "team/owner": "web"},
			},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{colorContainer, {Name: "sidecar"}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ContainerID: statusID}, {Name: "sidecar", ContainerID: "cri://s"}}},
		}
		if meta != nil {
			raw, _ := json.Marshal(meta)
			p.Annotations[kruiseappspub.RuntimeContainerMetaKey] = string(raw)
		}
		return p
	}
	current := ExpectedEnvHash(pod(nil, ""), &colorContainer)
	report := func(id string, hash uint64) *kruiseappspub.RuntimeContainerMetaSet {
		return &kruiseappspub.RuntimeContainerMetaSet{Containers: []kruiseappspub.RuntimeContainerMeta{
			{Name: "app", ContainerID: id, Hashes: kruiseappspub.RuntimeContainerHashes{ExtractedEnvFromMetadataHash: hash}},
			{Name: "sidecar", ContainerID: "cri://s"},
		}}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"no agent report: nothing to wait for", pod(nil, "cri://a1"), true},
		{"the restarted container runs the current values", pod(report("cri://a2", current), "cri://a2"), true},
		{"the report still has the old values", pod(report("cri://a1", current+1), "cri://a1"), false},
		{"the report is about another container than the status", pod(report("cri://a1", current), "cri://a2"), false},
		{"the agent could not read the env", pod(report("cri://a2", 0), "cri://a2"), true},
		{"the report misses the container", pod(&kruiseappspub.RuntimeContainerMetaSet{}, "cri://a2"), false},
	}
	for _, c := range cases {
		got, err := Completed(c.pod)
		if err != nil || got != c.want {
			t.Errorf("%s: Completed = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}
