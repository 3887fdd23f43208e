package chart

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/rollout/feature"
)

// checkDefaults checks the defaults the documentation promises: two elected replicas that spread over nodes
// and keep one up through disruptions, every module and gate at the manager's defaults, bounded resources.
func checkDefaults(t *testing.T, r rendered) {
	t.Helper()
	d := r.deployment(t)
	if ptr.Deref(d.Spec.Replicas, 0) != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	wantArgs("--leader-elect=true", "--zap-log-level=info")(t, r)
	for _, name := range []string{"enable-modules", "feature-gates"} {
		if v, ok := r.arg(t, name); ok {
			t.Errorf("default values pass --%s=%s; the manager's default should apply", name, v)
		}
	}
	pdb := typed[policyv1.PodDisruptionBudget](t, r.one(t, "PodDisruptionBudget"))
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget minAvailable %v, want 1", pdb.Spec.MinAvailable)
	}
	checkResources(t, r.manager(t).Resources)
	checkAntiAffinity(t, r)
	checkDefaultAgent(t, r)
}

func checkResources(t *testing.T, res corev1.ResourceRequirements) {
	t.Helper()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := res.Requests[name]; !ok {
			t.Errorf("no %s request", name)
		}
		if _, ok := res.Limits[name]; !ok {
			t.Errorf("no %s limit", name)
		}
	}
}

// checkAntiAffinity checks that the default anti-affinity (literal labels in values.yaml) selects the
// manager's own pods, on hostnames.
func checkAntiAffinity(t *testing.T, r rendered) {
	t.Helper()
	pod := r.deployment(t).Spec.Template
	aff := pod.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("affinity %+v, want one preferred pod anti-affinity term", aff)
	}
	term := aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	if term.TopologyKey != corev1.LabelHostname || term.LabelSelector == nil {
		t.Fatalf("anti-affinity term %+v, want one on %s", term, corev1.LabelHostname)
	}
	if !labels.SelectorFromSet(term.LabelSelector.MatchLabels).Matches(labels.Set(pod.Labels)) {
		t.Errorf("anti-affinity selector %v does not select the manager pods %v", term.LabelSelector.MatchLabels, pod.Labels)
	}
}

// checkFeatureGates checks the flag's value and that the manager's gate set accepts it as meant.
func checkFeatureGates(t *testing.T, r rendered) {
	t.Helper()
	value, _ := r.arg(t, "feature-gates")
	if value != "AdvancedDeployment=false,RolloutHistory=true" {
		t.Errorf("--feature-gates=%s", value)
	}
	gates, err := feature.NewGate()
	if err != nil {
		t.Fatal(err)
	}
	if err := gates.Set(value); err != nil {
		t.Fatalf("the manager rejects --feature-gates=%s: %v", value, err)
	}
	if gates.Enabled(feature.AdvancedDeployment) || !gates.Enabled(feature.RolloutHistory) {
		t.Errorf("--feature-gates=%s does not turn AdvancedDeployment off and RolloutHistory on", value)
	}
}

func checkMetricsService(t *testing.T, r rendered) {
	t.Helper()
	wantArgs("--metrics-bind-address=:8080")(t, r)
	svc := r.service(t, "flotilla-metrics")
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 {
		t.Fatalf("metrics Service ports %v, want one on 8080", svc.Spec.Ports)
	}
	if got := containerPort(t, r.manager(t), svc.Spec.Ports[0].TargetPort); got != "8080" {
		t.Errorf("metrics Service targets container port %s, want 8080", got)
	}
}

// checkMetricsOff checks that turning metrics off closes the endpoint and drops its port and Service.
func checkMetricsOff(t *testing.T, r rendered) {
	t.Helper()
	wantArgs("--metrics-bind-address=0")(t, r)
	for _, p := range r.manager(t).Ports {
		if p.Name == "metrics" {
			t.Error("metrics container port rendered with metrics off")
		}
	}
	if n := len(r.all("Service")); n != 1 {
		t.Errorf("%d Services rendered with metrics off, want the webhook Service only", n)
	}
}

// checkSingleReplica checks one unelected replica and no PodDisruptionBudget (it would block every drain).
func checkSingleReplica(t *testing.T, r rendered) {
	t.Helper()
	wantArgs("--leader-elect=false")(t, r)
	if ptr.Deref(r.deployment(t).Spec.Replicas, 0) != 1 {
		t.Error("replicas: 1 not rendered")
	}
	if n := len(r.all("PodDisruptionBudget")); n != 0 {
		t.Errorf("%d PodDisruptionBudgets rendered for one replica", n)
	}
}

// wantNames checks that every namespaced object and the ClusterRole take prefix, and the webhook
// configurations keep the names the manager looks up.
func wantNames(prefix string) func(*testing.T, rendered) {
	return func(t *testing.T, r rendered) {
		t.Helper()
		for _, o := range r.objs {
			fixed := o.GetKind() == "MutatingWebhookConfiguration" || o.GetKind() == "ValidatingWebhookConfiguration"
			if !fixed && !strings.HasPrefix(o.GetName(), prefix+"-") {
				t.Errorf("%s %s lacks the prefix %s-", o.GetKind(), o.GetName(), prefix)
			}
		}
		if got := r.env(t, "SECRET_NAME"); got != prefix+"-webhook-certs" {
			t.Errorf("SECRET_NAME %s, want %s-webhook-certs", got, prefix)
		}
	}
}

func checkScheduling(t *testing.T, r rendered) {
	t.Helper()
	spec := r.deployment(t).Spec.Template.Spec
	want := corev1.PodSpec{
		NodeSelector:     map[string]string{"pool": "system"},
		Tolerations:      []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
	}
	got := corev1.PodSpec{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations, ImagePullSecrets: spec.ImagePullSecrets}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scheduling fields (-want +got):\n%s", diff)
	}
	if img := r.manager(t).Image; img != "registry.example.com/flotilla-manager:dev" {
		t.Errorf("image %s", img)
	}
	if r.deployment(t).Spec.Template.Annotations["team"] != "platform" || r.managerPart().one(t, "ServiceAccount").GetAnnotations()["owner"] != "platform" {
		t.Error("podAnnotations or serviceAccount.annotations not rendered")
	}
}

// checkConfigurationNamespace: the manager reads the configuration ConfigMap from upstream's namespace and may
// read ConfigMaps there, and nothing more.
func checkConfigurationNamespace(t *testing.T, r rendered) {
	t.Helper()
	wantArgs("--configuration-namespace=kruise-rollout")(t, r)
	var role *rbacv1.Role
	for _, o := range r.all("Role") {
		if o.GetNamespace() == "kruise-rollout" {
			role = typed[rbacv1.Role](t, o)
		}
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}
	if role == nil || !equality.Semantic.DeepEqual(role.Rules, want) {
		t.Fatalf("Role in kruise-rollout: %+v, want one with the rules %+v", role, want)
	}
	for _, o := range r.all("RoleBinding") {
		if o.GetNamespace() != "kruise-rollout" {
			continue
		}
		b := typed[rbacv1.RoleBinding](t, o)
		if b.RoleRef.Name != role.Name || len(b.Subjects) != 1 || b.Subjects[0].Name != "flotilla-manager" ||
			b.Subjects[0].Namespace != r.rel.namespace {
			t.Errorf("RoleBinding in kruise-rollout: %+v", b)
		}
		return
	}
	t.Error("no RoleBinding in kruise-rollout")
}
