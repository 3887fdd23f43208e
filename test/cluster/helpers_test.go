package cluster

import (
	"bufio"
	"crypto/x509"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestPKI(t *testing.T) {
	p, err := newPKI(kubernetesServiceIP)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.cert)
	for _, host := range []string{"127.0.0.1", "localhost", "kubernetes.default.svc", kubernetesServiceIP} {
		_, err := p.apiserver.cert.Verify(x509.VerifyOptions{DNSName: host, Roots: roots})
		if err != nil {
			t.Errorf("serving certificate for %s: %v", host, err)
		}
	}
	clientUse := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := p.admin.cert.Verify(clientUse); err != nil {
		t.Errorf("admin client certificate: %v", err)
	}
	if got := p.admin.cert.Subject.Organization; !slices.Equal(got, []string{"system:masters"}) {
		t.Errorf("admin organization = %v, want [system:masters]", got)
	}
	if got := p.scheduler.cert.Subject.CommonName; got != "system:kube-scheduler" {
		t.Errorf("scheduler user = %q", got)
	}
}

func TestReadCRDs(t *testing.T) {
	crds, err := ReadCRDs("testdata/crds", "testdata/does-not-exist")
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 1 || crds[0].Name != "widgets.test.flotilla.dev" {
		t.Fatalf("got %d CRDs, want only widgets.test.flotilla.dev", len(crds))
	}
	if crds[0].Spec.Conversion == nil || crds[0].Spec.Conversion.Webhook == nil {
		t.Errorf("conversion webhook lost in decoding: %+v", crds[0].Spec.Conversion)
	}
}

func TestOwnerPID(t *testing.T) {
	tests := map[string]struct {
		pid int
		ok  bool
	}{
		"flotilla-cluster-123-4567": {123, true},
		"flotilla-etcd-9-abc":       {9, true},
		"flotilla-cluster-logs-123": {0, false},
		"flotilla-cluster-123":      {0, false},
		"other-123-4":               {0, false},
	}
	for name, want := range tests {
		pid, ok := ownerPID(name)
		if ok != want.ok || (ok && pid != want.pid) {
			t.Errorf("ownerPID(%q) = %d, %v; want %d, %v", name, pid, ok, want.pid, want.ok)
		}
	}
}

func TestSchedulable(t *testing.T) {
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	notReady := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse}
	taint := corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
	soft := corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}
	tests := []struct {
		name string
		node corev1.Node
		want bool
	}{
		{"ready", corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}}}, true},
		{"not ready", corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{notReady}}}, false},
		{"no conditions", corev1.Node{}, false},
		{"tainted", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}}}, false},
		{"prefer-no-schedule", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{soft}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}}}, true},
	}
	for _, tt := range tests {
		if got := schedulable(&tt.node); got != tt.want {
			t.Errorf("%s: schedulable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestChildDiesWithParent kills a helper process that started a child
// with startProcess and expects the kernel to kill the child too.
func TestChildDiesWithParent(t *testing.T) {
	if os.Getenv("FLOTILLA_CLUSTER_HELPER") == "1" {
		runHelper()
		return
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithParent$")
	helper.Env = append(os.Environ(), "FLOTILLA_CLUSTER_HELPER=1", "FLOTILLA_CLUSTER_HELPER_DIR="+t.TempDir())
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = helper.Process.Kill()
		t.Fatalf("read child PID: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || !processExists(child) {
		_ = helper.Process.Kill()
		t.Fatalf("child PID %q not running: %v", line, err)
	}
	_ = helper.Process.Signal(syscall.SIGKILL)
	_ = helper.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for processExists(child) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("child %d survived its parent", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runHelper starts a long sleep the way the cluster starts its
// processes, reports its PID and waits to be killed.
func runHelper() {
	p, err := startProcess("sleep", "/bin/sleep", []string{"300"}, nil, os.Getenv("FLOTILLA_CLUSTER_HELPER_DIR"))
	if err != nil {
		os.Exit(3)
	}
	_, _ = os.Stdout.WriteString(strconv.Itoa(p.pid()) + "\n")
	time.Sleep(time.Minute)
	os.Exit(4)
}
