package chart

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// clusterScoped are the rendered kinds without a namespace.
var clusterScoped = map[string]bool{
	"ClusterRole": true, "ClusterRoleBinding": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
}

// checkInvariants checks what every rendering keeps: objects in the release namespace, RBAC equal to the
// generated rules and bound to the manager's ServiceAccount, the webhooks of the file pointed at the
// release's Service, which reaches the manager's webhook port, and a locked-down manager pod.
func checkInvariants(t *testing.T, c chartCase, r rendered) {
	t.Helper()
	checkNamespaces(t, r)
	checkRBAC(t, c, r)
	checkWebhookService(t, r)
	checkWebhooks(t, c, r)
	checkProbes(t, r)
	checkPodSecurity(t, r)
	checkNodeAgent(t, c, r.agentPart())
}

func checkNamespaces(t *testing.T, r rendered) {
	t.Helper()
	for _, o := range r.objs {
		want := r.rel.namespace
		if clusterScoped[o.GetKind()] {
			want = ""
		}
		if configurationRBAC(o) {
			// Read access to configurationNamespace's ConfigMaps (checkConfigurationNamespace).
			continue
		}
		if o.GetNamespace() != want {
			t.Errorf("%s %s is in namespace %q, want %q", o.GetKind(), o.GetName(), o.GetNamespace(), want)
		}
	}
}

// configurationRBAC: o is the Role or RoleBinding that lets the manager read configurationNamespace.
func configurationRBAC(o *unstructured.Unstructured) bool {
	return (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") && strings.HasSuffix(o.GetName(), "-configuration")
}

func checkRBAC(t *testing.T, c chartCase, r rendered) {
	t.Helper()
	r = r.managerPart().without(configurationRBAC)
	clusterRules, roleRules := generatedRBAC(t)
	clusterRole := typed[rbacv1.ClusterRole](t, r.one(t, "ClusterRole"))
	if diff := cmp.Diff(append(clusterRules, c.extraRules...), clusterRole.Rules); diff != "" {
		t.Errorf("ClusterRole rules differ from rbac/role.yaml plus extraClusterRoleRules (-want +got):\n%s", diff)
	}
	role := typed[rbacv1.Role](t, r.one(t, "Role"))
	if diff := cmp.Diff(roleRules, role.Rules); diff != "" {
		t.Errorf("Role rules differ from rbac/role.yaml (-want +got):\n%s", diff)
	}
	checkBindings(t, r, clusterRole.Name, role.Name)
}

// checkBindings checks that both bindings grant their role to the ServiceAccount the manager runs as.
func checkBindings(t *testing.T, r rendered, clusterRole, role string) {
	t.Helper()
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: r.one(t, "ServiceAccount").GetName(), Namespace: r.rel.namespace}
	if got := r.deployment(t).Spec.Template.Spec.ServiceAccountName; got != sa.Name {
		t.Errorf("manager runs as ServiceAccount %q, want %q", got, sa.Name)
	}
	crb := typed[rbacv1.ClusterRoleBinding](t, r.one(t, "ClusterRoleBinding"))
	rb := typed[rbacv1.RoleBinding](t, r.one(t, "RoleBinding"))
	for _, got := range []struct {
		kind     string
		ref      rbacv1.RoleRef
		subjects []rbacv1.Subject
		want     string
	}{{"ClusterRole", crb.RoleRef, crb.Subjects, clusterRole}, {"Role", rb.RoleRef, rb.Subjects, role}} {
		if got.ref.Kind != got.kind || got.ref.Name != got.want {
			t.Errorf("binding refers to %s %s, want %s %s", got.ref.Kind, got.ref.Name, got.kind, got.want)
		}
		if diff := cmp.Diff([]rbacv1.Subject{sa}, got.subjects); diff != "" {
			t.Errorf("%s binding subjects (-want +got):\n%s", got.kind, diff)
		}
	}
}

// checkWebhookService checks that the Service the manager is told about selects the manager's pods and
// forwards 443 to the port the manager serves webhooks on.
func checkWebhookService(t *testing.T, r rendered) {
	t.Helper()
	svc := r.service(t, r.env(t, "SERVICE_NAME"))
	pod := r.deployment(t).Spec.Template
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
		t.Errorf("Service selector %v does not select the manager pods %v", svc.Spec.Selector, pod.Labels)
	}
	port, _ := r.arg(t, "webhook-port")
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 {
		t.Fatalf("webhook Service ports %v, want one on 443", svc.Spec.Ports)
	}
	if got := containerPort(t, r.manager(t), svc.Spec.Ports[0].TargetPort); got != port {
		t.Errorf("webhook Service targets container port %s, manager serves on --webhook-port=%s", got, port)
	}
}

// containerPort resolves a named or numbered target port to the container's port number.
func containerPort(t *testing.T, c corev1.Container, target intstr.IntOrString) string {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == target.StrVal || (target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
			return strconv.Itoa(int(p.ContainerPort))
		}
	}
	t.Fatalf("no container port %v", target)
	return ""
}

// checkWebhooks compares the rendered webhooks with the file's: the selected ones, unchanged but for their
// Service and the manager's identity in their matchConditions (the release's manager service account), in the
// file's order.
func checkWebhooks(t *testing.T, c chartCase, r rendered) {
	t.Helper()
	manager := "system:serviceaccount:" + r.rel.namespace + ":" + r.deployment(t).Spec.Template.Spec.ServiceAccountName
	want := fileWebhooks(t).webhookSet(t).installed(c.webhooks, r.env(t, "SERVICE_NAME"), r.rel.namespace, manager)
	got := r.webhookSet(t)
	if diff := cmp.Diff(want.mutating, got.mutating); diff != "" {
		t.Errorf("mutating webhooks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.validating, got.validating); diff != "" {
		t.Errorf("validating webhooks (-want +got):\n%s", diff)
	}
}

// checkProbes checks that liveness and readiness ask the manager's probe server.
func checkProbes(t *testing.T, r rendered) {
	t.Helper()
	c := r.manager(t)
	addr, _ := r.arg(t, "health-probe-bind-address")
	for path, probe := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path {
			t.Errorf("manager has no probe on %s", path)
			continue
		}
		if port := containerPort(t, c, probe.HTTPGet.Port); ":"+port != addr {
			t.Errorf("probe %s on port %s, manager serves probes on %s", path, port, addr)
		}
	}
}

// checkPodSecurity checks the hardening the manager relies on: a read-only root filesystem with the
// certificate directory on an emptyDir. The dry run checks the restricted Pod Security level.
func checkPodSecurity(t *testing.T, r rendered) {
	t.Helper()
	c := r.manager(t)
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("manager's root filesystem is writable")
	}
	certDir := r.env(t, "WEBHOOK_CERT_DIR")
	var volume string
	for _, m := range c.VolumeMounts {
		if m.MountPath == certDir {
			volume = m.Name
		}
	}
	for _, v := range r.deployment(t).Spec.Template.Spec.Volumes {
		if v.Name == volume && v.EmptyDir != nil {
			return
		}
	}
	t.Errorf("WEBHOOK_CERT_DIR %s is not an emptyDir mount", certDir)
}

// wantArgs checks that the manager's args include each of want.
func wantArgs(want ...string) func(*testing.T, rendered) {
	return func(t *testing.T, r rendered) {
		t.Helper()
		args := r.manager(t).Args
		for _, w := range want {
			name, _, _ := strings.Cut(w, "=")
			if got, _ := r.arg(t, strings.TrimPrefix(name, "--")); name+"="+got != w {
				t.Errorf("manager args %v lack %s", args, w)
			}
		}
	}
}
