package ingress_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/trafficrouting"
	"github.com/flotilla-dev/flotilla/trafficrouting/ingress"
	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
	"github.com/flotilla-dev/flotilla/trafficrouting/providertest"
)

var clusterConfig *rest.Config

func TestMain(m *testing.M) {
	os.Exit(cluster.RunPackage(m, cluster.Options{CRDDirs: []string{}}, &clusterConfig))
}

const configNamespace = "flotilla-system"

func newClient(t *testing.T) client.Client {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	c, err := client.New(clusterConfig, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// create creates obj; one that exists already (a namespace the tests share) is fine.
func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// fixture is a namespace with the stable Service and an Ingress with two hosts: one path served by the
// stable Service and one by another Service.
type fixture struct {
	c     client.Client
	ns    string
	owner metav1.OwnerReference
}

func newFixture(t *testing.T, class string) (fixture, trafficrouting.Provider) {
	t.Helper()
	c := newClient(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ingress-"}}
	create(t, c, ns)
	create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: configNamespace}})
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns.Name}}
	create(t, c, owner)
	create(t, c, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name, Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"example.com/team": "payments"}},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To(class),
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{"web.example"}, SecretName: "web-tls"}},
			Rules: []networkingv1.IngressRule{
				rule("web.example", path("/", "web"), path("/admin", "admin")),
				rule("other.example", path("/", "other")),
			},
		},
	})
	f := fixture{c: c, ns: ns.Name, owner: metav1.OwnerReference{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true),
	}}
	return f, f.provider(t, class)
}

func (f fixture) provider(t *testing.T, class string) trafficrouting.Provider {
	t.Helper()
	scripts := trafficrouting.ConfigMapScripts{Reader: f.c, Namespace: configNamespace}
	p, err := ingress.Factory(f.c, luavm.New(luavm.Options{}), scripts)(trafficrouting.Config{
		Namespace: f.ns, Owner: f.owner, StableService: "web", CanaryService: "web-canary",
		Ref: rolloutsv1beta1.TrafficRoutingRef{Service: "web", Ingress: &rolloutsv1beta1.IngressTrafficRouting{Name: "web", ClassType: class}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func rule(host string, paths ...networkingv1.HTTPIngressPath) networkingv1.IngressRule {
	return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{
		HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths},
	}}
}

func path(p, service string) networkingv1.HTTPIngressPath {
	prefix := networkingv1.PathTypePrefix
	return networkingv1.HTTPIngressPath{Path: p, PathType: &prefix, Backend: networkingv1.IngressBackend{
		Service: &networkingv1.IngressServiceBackend{Name: service, Port: networkingv1.ServiceBackendPort{Number: 80}},
	}}
}

func (f fixture) get(t *testing.T, name string) *networkingv1.Ingress {
	t.Helper()
	ing := &networkingv1.Ingress{}
	err := f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, ing)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return ing
}

// snapshot is the Ingresses' content, the canary one only while it exists.
func (f fixture) snapshot(t *testing.T) []byte {
	t.Helper()
	var out []any
	for _, name := range []string{"web", "web-canary"} {
		if ing := f.get(t, name); ing != nil {
			out = append(out, map[string]any{"name": name, "labels": ing.Labels, "annotations": ing.Annotations, "spec": ing.Spec})
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

const nginx = "nginx.ingress.kubernetes.io/"

// verifyNginx checks the canary Ingress against the nginx annotations the routes ask for.
func (f fixture) verifyNginx(t *testing.T, r trafficrouting.Routes) {
	t.Helper()
	canary := f.get(t, "web-canary")
	if canary == nil {
		t.Fatal("no canary Ingress")
	}
	a := canary.Annotations
	want := map[string]string{nginx + "canary": "true", "example.com/team": "payments"}
	if r.Weight != nil {
		want[nginx+"canary-weight"] = fmt.Sprint(*r.Weight)
	}
	for _, m := range r.Matches {
		want[nginx+"canary-by-header"] = string(m.Headers[0].Name)
		want[nginx+"canary-by-header-value"] = m.Headers[0].Value
	}
	for k, v := range want {
		if a[k] != v {
			t.Errorf("canary annotation %s = %q, want %q (all: %v)", k, a[k], v, a)
		}
	}
	f.verifySpec(t, canary)
}

func (f fixture) verifySpec(t *testing.T, canary *networkingv1.Ingress) {
	t.Helper()
	if len(canary.Spec.Rules) != 1 || canary.Spec.Rules[0].Host != "web.example" || len(canary.Spec.Rules[0].HTTP.Paths) != 1 {
		t.Fatalf("canary rules = %+v, want only web.example's path served by web", canary.Spec.Rules)
	}
	if p := canary.Spec.Rules[0].HTTP.Paths[0]; p.Path != "/" || p.Backend.Service.Name != "web-canary" {
		t.Errorf("canary path = %+v, want / served by web-canary", p)
	}
	if len(canary.Spec.TLS) != 1 || ptr.Deref(canary.Spec.IngressClassName, "") == "" {
		t.Errorf("canary lost the stable Ingress's TLS or class: %+v", canary.Spec)
	}
	if len(canary.OwnerReferences) != 1 || canary.OwnerReferences[0].UID != f.owner.UID {
		t.Errorf("canary owner = %v, want the Rollout", canary.OwnerReferences)
	}
}

func TestNginxConformance(t *testing.T) {
	var f fixture
	providertest.Run(t, providertest.Harness{
		Setup: func(t *testing.T) trafficrouting.Provider {
			var p trafficrouting.Provider
			f, p = newFixture(t, "nginx")
			return p
		},
		Snapshot: func(t *testing.T) []byte { return f.snapshot(t) },
		Verify:   func(t *testing.T, r trafficrouting.Routes) { f.verifyNginx(t, r) },
	})
}

// A class without a built-in script is served by the configuration ConfigMap's script.
func TestConfigMapScriptOverride(t *testing.T) {
	f, p := newFixture(t, "acme")
	if err := p.Initialize(t.Context()); err == nil || !strings.Contains(err.Error(), "lua.traffic.routing.ingress.acme") {
		t.Fatalf("Initialize without a script: %v, want an error naming the ConfigMap key", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: trafficrouting.ConfigurationName, Namespace: configNamespace}}
	_ = f.c.Delete(t.Context(), cm)
	cm.Data = map[string]string{"lua.traffic.routing.ingress.acme": `
local a = {}
a["acme.example/canary-percent"] = obj.weight
return a`}
	create(t, f.c, cm)
	t.Cleanup(func() { _ = f.c.Delete(context.Background(), cm) }) // t.Context() is canceled by then
	w := int32(30)
	for range 3 {
		if done, err := p.EnsureRoutes(t.Context(), trafficrouting.Routes{Weight: &w}); err != nil || done {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if got := f.get(t, "web-canary").Annotations; len(got) != 1 || got["acme.example/canary-percent"] != "30" {
		t.Errorf("annotations from the ConfigMap script = %v, want only canary-percent 30", got)
	}
}

func TestMissingIngressAndBadScript(t *testing.T) {
	f, _ := newFixture(t, "nginx")
	p, err := ingress.Factory(f.c, luavm.New(luavm.Options{}), trafficrouting.ConfigMapScripts{Reader: f.c, Namespace: configNamespace})(trafficrouting.Config{
		Namespace: f.ns, Owner: f.owner, StableService: "web", CanaryService: "web-canary",
		Ref: rolloutsv1beta1.TrafficRoutingRef{Ingress: &rolloutsv1beta1.IngressTrafficRouting{Name: "missing"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Initialize(t.Context()); err == nil || !strings.Contains(err.Error(), f.ns+"/missing") {
		t.Errorf("Initialize on a missing Ingress: %v, want an error naming it", err)
	}
	bf, broken := newFixture(t, "broken")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: trafficrouting.ConfigurationName, Namespace: configNamespace},
		Data: map[string]string{"lua.traffic.routing.ingress.broken": `return "not a table"`}}
	_ = f.c.Delete(t.Context(), cm)
	create(t, f.c, cm)
	t.Cleanup(func() { _ = f.c.Delete(context.Background(), cm) }) // t.Context() is canceled by then
	w := int32(10)
	_, err = broken.EnsureRoutes(t.Context(), trafficrouting.Routes{Weight: &w})
	if err == nil || !strings.Contains(err.Error(), `ingress class "broken"`) {
		t.Errorf("EnsureRoutes with a script returning a string: %v, want an error naming the class", err)
	}
	if bf.get(t, "web-canary") != nil {
		t.Error("a canary Ingress was created although its script failed")
	}
}
