package cri_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/nodeagent/cri/critest"
)

var pod = critest.Pod{Namespace: "ns", Name: "web-0", UID: "uid-1"}

func dial(t *testing.T) (*critest.Runtime, *cri.Client) {
	t.Helper()
	rt := critest.Start(t)
	c, err := cri.Dial(t.Context(), rt.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return rt, c
}

func TestDialVersion(t *testing.T) {
	_, c := dial(t)
	v, err := c.Version(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if v.RuntimeName != "critest" || v.RuntimeAPIVersion != "v1" {
		t.Errorf("Version = %+v", v)
	}
}

func TestDialRejects(t *testing.T) {
	for _, endpoint := range []string{"tcp://10.0.0.1:1234", "relative/containerd.sock", "unix://relative.sock", ""} {
		if _, err := cri.Dial(t.Context(), endpoint); err == nil {
			t.Errorf("Dial(%q) succeeded", endpoint)
		}
	}
}

func TestDialNoRuntime(t *testing.T) {
	start := time.Now()
	_, err := cri.Dial(t.Context(), filepath.Join(t.TempDir(), "missing.sock"))
	if err == nil {
		t.Fatal("Dial of a missing socket succeeded")
	}
	if d := time.Since(start); d > cri.DefaultTimeout {
		t.Errorf("Dial took %v to fail", d)
	}
}

func TestConnectProbesKnownSockets(t *testing.T) {
	rt := critest.Start(t)
	hostRun := t.TempDir()
	// A stale file at the first known path is skipped; the runtime answers under crio/.
	if err := os.WriteFile(filepath.Join(hostRun, "containerd.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(hostRun, "crio"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.TrimPrefix(rt.Endpoint, "unix://"), filepath.Join(hostRun, "crio", "crio.sock")); err != nil {
		t.Fatal(err)
	}
	c, err := cri.Connect(t.Context(), "", hostRun)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if want := "unix://" + filepath.Join(hostRun, "crio", "crio.sock"); c.Endpoint != want {
		t.Errorf("Endpoint = %s, want %s", c.Endpoint, want)
	}
}

func TestConnectNothingFound(t *testing.T) {
	_, err := cri.Connect(t.Context(), "", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "--cri-endpoint") {
		t.Errorf("Connect = %v, want an error naming --cri-endpoint", err)
	}
}

func TestListContainersByLabel(t *testing.T) {
	rt, c := dial(t)
	a := rt.Run(pod, "a")
	rt.Run(pod, "b")
	rt.Run(critest.Pod{Namespace: "ns", Name: "other", UID: "uid-2"}, "a")
	got, err := c.ListContainers(t.Context(), map[string]string{cri.LabelPodUID: pod.UID, cri.LabelContainerName: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != a || got[0].Name != "a" || got[0].State != cri.StateRunning {
		t.Fatalf("ListContainers = %+v, want container %s running", got, a)
	}
	if got[0].Labels[cri.LabelPodName] != pod.Name || got[0].RestartCount() != 0 {
		t.Errorf("labels %v, restart count %d", got[0].Labels, got[0].RestartCount())
	}
}

func TestStopContainerAndStatus(t *testing.T) {
	rt, c := dial(t)
	id := rt.Run(pod, "a")
	if err := c.StopContainer(t.Context(), id, 7); err != nil {
		t.Fatal(err)
	}
	st, err := c.ContainerStatus(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != cri.StateExited || st.StartedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
		t.Errorf("status after stop = %+v", st)
	}
	if diff := cmp.Diff([]critest.Stop{{ContainerID: id, GraceSeconds: 7}}, rt.Stops()); diff != "" {
		t.Errorf("stops (-want +got):\n%s", diff)
	}
	rt.FailStop(id, errors.New("device busy"))
	if err := c.StopContainer(t.Context(), id, 0); err == nil || !strings.Contains(err.Error(), "device busy") {
		t.Errorf("scripted stop failure = %v", err)
	}
	if _, err := c.ContainerStatus(t.Context(), "nope"); err == nil {
		t.Error("status of an unknown container succeeded")
	}
}

func TestExecSync(t *testing.T) {
	rt, c := dial(t)
	id := rt.Run(pod, "a")
	rt.OnExec(func(_ string, cmd []string) (cri.ExecResult, error) {
		return cri.ExecResult{Stdout: []byte(strings.Join(cmd, " ")), ExitCode: 3}, nil
	})
	res, err := c.ExecSync(t.Context(), id, []string{"sh", "-c", "exit 3"}, 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "sh -c exit 3" || res.ExitCode != 3 {
		t.Errorf("ExecSync = %+v", res)
	}
	if diff := cmp.Diff([]critest.Exec{{ContainerID: id, Cmd: []string{"sh", "-c", "exit 3"}}}, rt.Execs()); diff != "" {
		t.Errorf("execs (-want +got):\n%s", diff)
	}
}

func TestPodContainersNewestOfEachName(t *testing.T) {
	rt, c := dial(t)
	rt.Run(pod, "a")
	b := rt.Run(pod, "b")
	a2, err := rt.Restart(pod.UID, "a")
	if err != nil {
		t.Fatal(err)
	}
	got, err := cri.PodContainers(t.Context(), c, pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["a"].ID != a2 || got["b"].ID != b {
		t.Fatalf("PodContainers = %+v, want a=%s b=%s", got, a2, b)
	}
	if got["a"].RestartCount() != 1 || got["a"].State != cri.StateRunning {
		t.Errorf("restarted a = %+v", got["a"])
	}
}

func TestRestartCountFallsBackToAttempt(t *testing.T) {
	cases := []struct {
		c    cri.Container
		want int32
	}{
		{cri.Container{Attempt: 4}, 4},
		{cri.Container{Attempt: 4, Annotations: map[string]string{cri.AnnotationRestartCount: "6"}}, 6},
		{cri.Container{Attempt: 2, Annotations: map[string]string{cri.AnnotationRestartCount: "x"}}, 2},
	}
	for _, tc := range cases {
		if got := tc.c.RestartCount(); got != tc.want {
			t.Errorf("RestartCount(%+v) = %d, want %d", tc.c, got, tc.want)
		}
	}
}
