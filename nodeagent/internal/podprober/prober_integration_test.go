package podprober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/nodeagent/cri/critest"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// The prober needs only the API server: the tests write the NodePodProbe's spec as the manager would and
// play the containers through the critest runtime.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

var nodes atomic.Int32

// startProber runs the prober of a fresh node name in-process and returns a client and the runtime.
func startProber(t *testing.T) (client.Client, *critest.Runtime, string) {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
	c := managertest.DirectClient(t, clusterConfig, scheme)
	fake := critest.Start(t)
	rt := fake.Dial(t)
	node := fmt.Sprintf("probe-node-%d", nodes.Add(1))
	managertest.Start(t, clusterConfig, scheme, (&Reconciler{NodeName: node, Runtime: rt}).SetupWithManager,
		func(o *ctrl.Options) { o.Cache = cache.Options{ByObject: CacheByObject(node)} })
	return c, fake, node
}

func probeOf(h corev1.ProbeHandler) kruiseappsv1alpha1.ContainerProbeSpec {
	return kruiseappsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: h, PeriodSeconds: 1, FailureThreshold: 1}}
}

// waitState waits until the status shows state for the probe of the pod with uid, and returns its message.
func waitState(t *testing.T, c client.Client, node, uid, probe string, state kruiseappsv1alpha1.ProbeState) string {
	t.Helper()
	var msg string
	managertest.Eventually(t, 30*time.Second, fmt.Sprintf("probe %s of pod %s %s", probe, uid, state), func(ctx context.Context) (bool, error) {
		npp := &kruiseappsv1alpha1.NodePodProbe{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, npp); err != nil {
			return false, err
		}
		for _, ps := range npp.Status.PodProbeStatuses {
			for _, s := range ps.ProbeStates {
				if ps.UID == uid && s.Name == probe && s.State == state {
					msg = s.Message
					return true, nil
				}
			}
		}
		return false, nil
	})
	return msg
}

// TestExecProbeInContainer: an exec probe runs in the pod's container through the runtime; its exit code
// decides, and the command's output is the message.
func TestExecProbeInContainer(t *testing.T) {
	c, fake, node := startProber(t)
	id := fake.Run(critest.Pod{Namespace: "ns", Name: "game-0", UID: "uid-game-0"}, "game")
	var idle atomic.Bool
	idle.Store(true)
	fake.OnExec(func(string, []string) (cri.ExecResult, error) {
		if idle.Load() {
			return cri.ExecResult{Stdout: []byte("idle\n")}, nil
		}
		return cri.ExecResult{Stderr: []byte("2 players"), ExitCode: 1}, nil
	})
	managertest.Create(t, c, &kruiseappsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: kruiseappsv1alpha1.NodePodProbeSpec{PodProbes: []kruiseappsv1alpha1.PodProbe{{
			Name: "game-0", Namespace: "ns", UID: "uid-game-0", IP: "10.0.0.9", Probes: []kruiseappsv1alpha1.ContainerProbe{{
				Name: "game#idle", ContainerName: "game",
				Probe: probeOf(corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/idle.sh"}}}),
			}},
		}}}})
	if msg := waitState(t, c, node, "uid-game-0", "game#idle", kruiseappsv1alpha1.ProbeSucceeded); msg != "idle" {
		t.Errorf("message = %q, want the command's output", msg)
	}
	idle.Store(false)
	msg := waitState(t, c, node, "uid-game-0", "game#idle", kruiseappsv1alpha1.ProbeFailed)
	if msg != "command exited with code 1: 2 players" {
		t.Errorf("message = %q", msg)
	}
	for _, e := range fake.Execs() {
		if e.ContainerID != id || len(e.Cmd) != 1 || e.Cmd[0] != "/idle.sh" {
			t.Fatalf("exec %+v, want /idle.sh in container %s", e, id)
		}
	}
}

// TestNetworkProbes: httpGet and tcpSocket probes reach the pod's IP (the loopback here); a probe whose pod
// leaves the spec leaves the status.
func TestNetworkProbes(t *testing.T) {
	c, _, node := startProber(t)
	var healthy atomic.Bool
	healthy.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	closed := closedPort(t)
	npp := &kruiseappsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: kruiseappsv1alpha1.NodePodProbeSpec{PodProbes: []kruiseappsv1alpha1.PodProbe{
			{Name: "web-0", Namespace: "ns", UID: "uid-web-0", IP: "127.0.0.1", Probes: []kruiseappsv1alpha1.ContainerProbe{
				{Name: "web#http", ContainerName: "web", Probe: probeOf(corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt(p)}})},
				{Name: "web#tcp", ContainerName: "web", Probe: probeOf(corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(p)}})},
			}},
			{Name: "web-1", Namespace: "ns", UID: "uid-web-1", IP: "127.0.0.1", Probes: []kruiseappsv1alpha1.ContainerProbe{
				{Name: "web#tcp", ContainerName: "web", Probe: probeOf(corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(closed)}})},
			}},
		}}}
	managertest.Create(t, c, npp)
	waitState(t, c, node, "uid-web-0", "web#http", kruiseappsv1alpha1.ProbeSucceeded)
	waitState(t, c, node, "uid-web-0", "web#tcp", kruiseappsv1alpha1.ProbeSucceeded)
	waitState(t, c, node, "uid-web-1", "web#tcp", kruiseappsv1alpha1.ProbeFailed)
	healthy.Store(false)
	if msg := waitState(t, c, node, "uid-web-0", "web#http", kruiseappsv1alpha1.ProbeFailed); msg != "HTTP 503: draining" {
		t.Errorf("message = %q", msg)
	}

	// The manager drops web-1 from the spec: its status goes.
	managertest.Update(t, c, npp, func(npp *kruiseappsv1alpha1.NodePodProbe) { npp.Spec.PodProbes = npp.Spec.PodProbes[:1] })
	managertest.Eventually(t, 30*time.Second, "web-1 gone from the status", func(ctx context.Context) (bool, error) {
		got := &kruiseappsv1alpha1.NodePodProbe{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, got); err != nil {
			return false, err
		}
		for _, ps := range got.Status.PodProbeStatuses {
			if ps.UID == "uid-web-1" {
				return false, nil
			}
		}
		return len(got.Status.PodProbeStatuses) == 1, nil
	})
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
	return port
}
