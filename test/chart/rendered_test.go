package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The webhook configuration names the manager's certificate manager looks up (rollout/cmd/manager, package
// main, so not importable): the chart must keep them whatever the release is called.
const (
	mutatingConfigName   = "flotilla-mutating-webhook-configuration"
	validatingConfigName = "flotilla-validating-webhook-configuration"
)

// rendered is the output of one `helm template`.
type rendered struct {
	rel  release
	objs []*unstructured.Unstructured
}

func (r rendered) all(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// componentLabel tells the node agent's objects (value nodeagent) from the manager's.
const componentLabel = "app.kubernetes.io/component"

// without is the rendering less the objects drop picks.
func (r rendered) without(drop func(*unstructured.Unstructured) bool) rendered {
	out := rendered{rel: r.rel}
	for _, o := range r.objs {
		if !drop(o) {
			out.objs = append(out.objs, o)
		}
	}
	return out
}

// managerPart is the rendering without the node agent's objects; agentPart holds only those.
func (r rendered) managerPart() rendered { return r.filter(false) }
func (r rendered) agentPart() rendered   { return r.filter(true) }

func (r rendered) filter(agent bool) rendered {
	out := rendered{rel: r.rel}
	for _, o := range r.objs {
		if (o.GetLabels()[componentLabel] == "nodeagent") == agent {
			out.objs = append(out.objs, o)
		}
	}
	return out
}

// one returns the only object of a kind, failing the test unless there is exactly one.
func (r rendered) one(t testing.TB, kind string) *unstructured.Unstructured {
	t.Helper()
	objs := r.all(kind)
	if len(objs) != 1 {
		t.Fatalf("rendered %d %s objects, want 1", len(objs), kind)
	}
	return objs[0]
}

func (r rendered) deployment(t testing.TB) *appsv1.Deployment {
	t.Helper()
	return typed[appsv1.Deployment](t, r.one(t, "Deployment"))
}

// manager is the manager container of the Deployment.
func (r rendered) manager(t testing.TB) corev1.Container {
	t.Helper()
	containers := r.deployment(t).Spec.Template.Spec.Containers
	if len(containers) != 1 || containers[0].Name != "manager" {
		t.Fatalf("Deployment containers %v, want one named manager", containers)
	}
	return containers[0]
}

// arg returns the value of --name=value in the manager's args, and whether it is there.
func (r rendered) arg(t testing.TB, name string) (string, bool) {
	t.Helper()
	var value string
	found := false
	for _, a := range r.manager(t).Args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			value, found = v, true
		}
	}
	return value, found
}

func (r rendered) env(t testing.TB, name string) string {
	t.Helper()
	for _, e := range r.manager(t).Env {
		if e.Name == name {
			return e.Value
		}
	}
	t.Fatalf("manager env has no %s", name)
	return ""
}

// service returns the rendered Service of that name.
func (r rendered) service(t testing.TB, name string) *corev1.Service {
	t.Helper()
	for _, o := range r.all("Service") {
		if o.GetName() == name {
			return typed[corev1.Service](t, o)
		}
	}
	t.Fatalf("no Service %s rendered", name)
	return nil
}

// webhookSet holds the webhooks of the two configurations.
type webhookSet struct {
	mutating   []admissionregistrationv1.MutatingWebhook
	validating []admissionregistrationv1.ValidatingWebhook
}

// webhookSet reads the configurations, failing the test if one is named other than the manager expects.
func (r rendered) webhookSet(t testing.TB) webhookSet {
	t.Helper()
	var s webhookSet
	for _, o := range r.all("MutatingWebhookConfiguration") {
		checkName(t, o, mutatingConfigName)
		s.mutating = append(s.mutating, typed[admissionregistrationv1.MutatingWebhookConfiguration](t, o).Webhooks...)
	}
	for _, o := range r.all("ValidatingWebhookConfiguration") {
		checkName(t, o, validatingConfigName)
		s.validating = append(s.validating, typed[admissionregistrationv1.ValidatingWebhookConfiguration](t, o).Webhooks...)
	}
	return s
}

func checkName(t testing.TB, o *unstructured.Unstructured, want string) {
	t.Helper()
	if o.GetName() != want {
		t.Errorf("%s is named %s; the manager only patches %s", o.GetKind(), o.GetName(), want)
	}
}

// fileManager is the manager's identity the file's matchConditions name; the chart puts its release's there.
const fileManager = "system:serviceaccount:flotilla-system:flotilla-manager"

// installed is what the chart should make of the file's webhooks: those keep() accepts by name and path,
// pointed at the release's Service, their matchConditions naming manager instead of fileManager.
func (s webhookSet) installed(keep func(name, path string) bool, service, namespace, manager string) webhookSet {
	var out webhookSet
	for _, w := range s.mutating {
		if w.ClientConfig.Service != nil && keep(w.Name, ptrValue(w.ClientConfig.Service.Path)) {
			w.ClientConfig = pointedAt(w.ClientConfig, service, namespace)
			w.MatchConditions = namingManager(w.MatchConditions, manager)
			out.mutating = append(out.mutating, w)
		}
	}
	for _, w := range s.validating {
		if w.ClientConfig.Service != nil && keep(w.Name, ptrValue(w.ClientConfig.Service.Path)) {
			w.ClientConfig = pointedAt(w.ClientConfig, service, namespace)
			w.MatchConditions = namingManager(w.MatchConditions, manager)
			out.validating = append(out.validating, w)
		}
	}
	return out
}

func namingManager(conds []admissionregistrationv1.MatchCondition, manager string) []admissionregistrationv1.MatchCondition {
	var out []admissionregistrationv1.MatchCondition
	for _, c := range conds {
		c.Expression = strings.ReplaceAll(c.Expression, fileManager, manager)
		out = append(out, c)
	}
	return out
}

func pointedAt(cc admissionregistrationv1.WebhookClientConfig, service, namespace string) admissionregistrationv1.WebhookClientConfig {
	svc := *cc.Service
	svc.Name, svc.Namespace = service, namespace
	cc.Service = &svc
	return cc
}

func ptrValue(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// fileWebhooks reads charts/flotilla/webhooks/webhook-configurations.yaml the way rendered.webhooks reads
// the chart's output.
func fileWebhooks(t testing.TB) rendered {
	t.Helper()
	return readObjects(t, filepath.Join(chartDir, "webhooks", "webhook-configurations.yaml"))
}

// generatedRBAC reads the rules `make manifests` generated from the markers.
func generatedRBAC(t testing.TB) (cluster, namespaced []rbacv1.PolicyRule) {
	t.Helper()
	r := readObjects(t, filepath.Join(chartDir, "rbac", "role.yaml"))
	return typed[rbacv1.ClusterRole](t, r.one(t, "ClusterRole")).Rules, typed[rbacv1.Role](t, r.one(t, "Role")).Rules
}

// generatedAgentRBAC reads the node agent's rules, generated into rbac/nodeagent/role.yaml: a ClusterRole only.
func generatedAgentRBAC(t testing.TB) []rbacv1.PolicyRule {
	t.Helper()
	r := readObjects(t, filepath.Join(chartDir, "rbac", "nodeagent", "role.yaml"))
	if n := len(r.all("Role")); n != 0 {
		t.Fatalf("the node agent's markers ask for %d namespaced Roles; the chart renders none", n)
	}
	return typed[rbacv1.ClusterRole](t, r.one(t, "ClusterRole")).Rules
}

func readObjects(t testing.TB, rel string) rendered {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(data)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return rendered{objs: objs}
}
