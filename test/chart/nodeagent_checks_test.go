package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// agentKinds are the kinds the node agent's part of the chart renders, one each.
var agentKinds = []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet"}

// checkNodeAgent checks the node agent's part of a rendering: absent when the case says so; else exactly its
// ServiceAccount, the generated ClusterRole bound to it, and a DaemonSet that runs as it, learns its node,
// reaches the host's CRI socket through a read-only mount and is otherwise locked down.
func checkNodeAgent(t *testing.T, c chartCase, agent rendered) {
	t.Helper()
	if c.noAgent {
		for _, o := range agent.objs {
			t.Errorf("%s %s rendered; the case installs no node agent", o.GetKind(), o.GetName())
		}
		return
	}
	if len(agent.objs) != len(agentKinds) {
		t.Fatalf("the node agent's part has %d objects, want one of each of %v", len(agent.objs), agentKinds)
	}
	role := typed[rbacv1.ClusterRole](t, agent.one(t, "ClusterRole"))
	if diff := cmp.Diff(generatedAgentRBAC(t), role.Rules); diff != "" {
		t.Errorf("node agent ClusterRole differs from rbac/nodeagent/role.yaml (-want +got):\n%s", diff)
	}
	sa := agent.one(t, "ServiceAccount").GetName()
	crb := typed[rbacv1.ClusterRoleBinding](t, agent.one(t, "ClusterRoleBinding"))
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: agent.rel.namespace}}
	if crb.RoleRef.Name != role.Name || !cmp.Equal(wantSubjects, crb.Subjects) {
		t.Errorf("node agent binding %v -> %v, want %s -> %v", crb.RoleRef, crb.Subjects, role.Name, wantSubjects)
	}
	checkAgentPod(t, agent.daemonSet(t), sa)
}

func checkAgentPod(t *testing.T, ds *appsv1.DaemonSet, sa string) {
	t.Helper()
	pod := ds.Spec.Template
	if !labels.SelectorFromSet(ds.Spec.Selector.MatchLabels).Matches(labels.Set(pod.Labels)) {
		t.Errorf("DaemonSet selector %v does not select its pods %v", ds.Spec.Selector.MatchLabels, pod.Labels)
	}
	if pod.Spec.ServiceAccountName != sa {
		t.Errorf("node agent runs as ServiceAccount %q, want %q", pod.Spec.ServiceAccountName, sa)
	}
	ctr := agentContainer(t, ds)
	nodeName := corev1.EnvVar{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}
	if !slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool { return cmp.Equal(e, nodeName) }) {
		t.Errorf("node agent env %v lacks NODE_NAME from spec.nodeName", ctr.Env)
	}
	sc := ctr.SecurityContext
	if sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || ptr.Deref(sc.Privileged, false) {
		t.Errorf("node agent securityContext %+v: want a read-only root, no escalation, every capability dropped", sc)
	}
	checkCRIMount(t, pod.Spec, ctr)
	checkResources(t, ctr.Resources)
}

// checkCRIMount checks that the host's /var/run reaches the agent read-only at the directory it probes.
func checkCRIMount(t *testing.T, spec corev1.PodSpec, ctr corev1.Container) {
	t.Helper()
	dir := argValue(ctr.Args, "host-run-dir")
	for _, m := range ctr.VolumeMounts {
		if m.MountPath != dir {
			continue
		}
		if !m.ReadOnly {
			t.Errorf("the host's run directory is mounted writable at %s", dir)
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.HostPath != nil && v.HostPath.Path == "/var/run" {
				return
			}
		}
	}
	t.Errorf("no hostPath /var/run mounted at --host-run-dir=%s (mounts %v)", dir, ctr.VolumeMounts)
}

// checkDefaultAgent checks the defaults: every node, tainted ones included, and the runtime probed.
func checkDefaultAgent(t *testing.T, r rendered) {
	t.Helper()
	ds := r.agentPart().daemonSet(t)
	if want := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}; !cmp.Equal(want, ds.Spec.Template.Spec.Tolerations) {
		t.Errorf("node agent tolerations %v, want %v", ds.Spec.Template.Spec.Tolerations, want)
	}
	if v := argValue(agentContainer(t, ds).Args, "cri-endpoint"); v != "" {
		t.Errorf("default --cri-endpoint=%s; the agent should probe the known sockets", v)
	}
}

func checkAgentSettings(t *testing.T, r rendered) {
	t.Helper()
	ds := r.agentPart().daemonSet(t)
	ctr := agentContainer(t, ds)
	for name, want := range map[string]string{
		"cri-endpoint": "unix:///hostvarrun/k3s/containerd/containerd.sock", "addr": ":10301", "zap-log-level": "debug",
	} {
		if got := argValue(ctr.Args, name); got != want {
			t.Errorf("--%s=%q, want %q", name, got, want)
		}
	}
	if ctr.Image != "registry.example.com/flotilla-nodeagent:dev" {
		t.Errorf("node agent image %s", ctr.Image)
	}
	if want := []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}; !cmp.Equal(want, ds.Spec.Template.Spec.Tolerations) {
		t.Errorf("node agent tolerations %v, want %v", ds.Spec.Template.Spec.Tolerations, want)
	}
}

func (r rendered) daemonSet(t testing.TB) *appsv1.DaemonSet {
	t.Helper()
	return typed[appsv1.DaemonSet](t, r.one(t, "DaemonSet"))
}

func agentContainer(t testing.TB, ds *appsv1.DaemonSet) corev1.Container {
	t.Helper()
	containers := ds.Spec.Template.Spec.Containers
	if len(containers) != 1 || containers[0].Name != "nodeagent" {
		t.Fatalf("DaemonSet containers %v, want one named nodeagent", containers)
	}
	return containers[0]
}

// argValue returns the value of --name=value in args; empty when absent.
func argValue(args []string, name string) string {
	var value string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			value = v
		}
	}
	return value
}

func TestBeyondAgentExemptions(t *testing.T) {
	exempt := `299 would violate PodSecurity "restricted:latest": ` + strings.Join(agentExemptions, ", ")
	if got := beyondAgentExemptions([]string{exempt}); got != nil {
		t.Errorf("exempt checks left %q", got)
	}
	more := `299 would violate PodSecurity "restricted:latest": ` + agentExemptions[0] + `, privileged (container "nodeagent" must not set securityContext.privileged=true)`
	if got := beyondAgentExemptions([]string{more, "299 something else"}); len(got) != 2 || !strings.Contains(got[0], "privileged") {
		t.Errorf("beyondAgentExemptions = %q, want the privileged check and the other warning kept", got)
	}
}
