package custom_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/trafficrouting"
	"github.com/flotilla-dev/flotilla/trafficrouting/custom"
	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
	"github.com/flotilla-dev/flotilla/trafficrouting/providertest"
)

var clusterConfig *rest.Config

func TestMain(m *testing.M) {
	os.Exit(cluster.RunPackage(m, cluster.Options{CRDDirs: []string{"trafficrouting/custom/testdata/crds"}}, &clusterConfig))
}

const configNamespace = "flotilla-system"

// The VirtualService of the tests: one route to the stable Service, with labels and annotations of its own.
const virtualService = `
apiVersion: networking.istio.io/v1beta1
kind: VirtualService
metadata:
  name: web
  labels: {app: web}
  annotations: {example.com/owner: payments}
spec:
  hosts: [web.example]
  http:
  - route:
    - destination: {host: web}`

type fixture struct {
	c     client.Client
	ns    string
	owner metav1.OwnerReference
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	c, err := client.New(clusterConfig, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "custom-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	f := fixture{c: c, ns: ns.Name, owner: metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID}}
	vs := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(virtualService), &vs.Object); err != nil {
		t.Fatal(err)
	}
	vs.SetNamespace(ns.Name)
	if err := c.Create(t.Context(), vs); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f fixture) provider(t *testing.T, refs ...rolloutsv1beta1.ObjectRef) trafficrouting.Provider {
	t.Helper()
	if refs == nil {
		refs = []rolloutsv1beta1.ObjectRef{{APIVersion: "networking.istio.io/v1beta1", Kind: "VirtualService", Name: "web"}}
	}
	p, err := custom.Factory(f.c, luavm.New(luavm.Options{}), trafficrouting.ConfigMapScripts{Reader: f.c, Namespace: configNamespace})(
		trafficrouting.Config{Namespace: f.ns, Owner: f.owner, StableService: "web", CanaryService: "web-canary",
			Ref: rolloutsv1beta1.TrafficRoutingRef{Service: "web", CustomNetworkRefs: refs}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f fixture) get(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	vs := &unstructured.Unstructured{}
	vs.SetAPIVersion("networking.istio.io/v1beta1")
	vs.SetKind("VirtualService")
	if err := f.c.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: "web"}, vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

func (f fixture) snapshot(t *testing.T) []byte {
	t.Helper()
	vs := f.get(t)
	data, err := json.Marshal(map[string]any{"spec": vs.Object["spec"], "labels": vs.GetLabels(), "annotations": vs.GetAnnotations()})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// routes lists the VirtualService's http routes as "match -> host:weight, ..." lines.
func (f fixture) routes(t *testing.T) []string {
	t.Helper()
	http, _, _ := unstructured.NestedSlice(f.get(t).Object, "spec", "http")
	var out []string
	for _, h := range http {
		rule := h.(map[string]any)
		line := ""
		if m, ok := rule["match"]; ok {
			data, _ := json.Marshal(m)
			line = string(data) + " -> "
		}
		var dests []string
		for _, r := range rule["route"].([]any) {
			route := r.(map[string]any)
			host, _, _ := unstructured.NestedString(route, "destination", "host")
			if w, ok := route["weight"]; ok {
				host += fmt.Sprintf(":%v", w)
			}
			dests = append(dests, host)
		}
		out = append(out, line+strings.Join(dests, ","))
	}
	return out
}

func (f fixture) verify(t *testing.T, r trafficrouting.Routes) {
	t.Helper()
	got := f.routes(t)
	var want []string
	if len(r.Matches) > 0 {
		want = append(want, `[{"headers":{"user-agent":{"exact":"pc"}}}] -> web-canary`, "web")
	} else {
		w := *r.Weight
		want = append(want, fmt.Sprintf("web:%d,web-canary:%d", 100-w, w))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("routes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if saved := f.get(t).GetAnnotations()[rolloutsv1beta1.OriginalSpecConfigurationAnnotation]; saved == "" {
		t.Error("the original configuration is not saved on the object")
	}
}

func TestVirtualServiceConformance(t *testing.T) {
	var f fixture
	providertest.Run(t, providertest.Harness{
		Setup: func(t *testing.T) trafficrouting.Provider {
			f = newFixture(t)
			return f.provider(t)
		},
		Snapshot: func(t *testing.T) []byte { return f.snapshot(t) },
		Verify:   func(t *testing.T, r trafficrouting.Routes) { f.verify(t, r) },
	})
}

func TestMissingObjectAndScript(t *testing.T) {
	f := newFixture(t)
	p := f.provider(t, rolloutsv1beta1.ObjectRef{APIVersion: "networking.istio.io/v1beta1", Kind: "VirtualService", Name: "missing"})
	if err := p.Initialize(t.Context()); err == nil || !strings.Contains(err.Error(), "VirtualService "+f.ns+"/missing") {
		t.Errorf("Initialize on a missing object: %v, want an error naming it", err)
	}
	if done, err := p.Finalize(t.Context()); err != nil || !done {
		t.Errorf("Finalize on a missing object: done=%v err=%v, want done", done, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns}}
	if err := f.c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	p = f.provider(t, rolloutsv1beta1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "web"})
	if err := p.Initialize(t.Context()); err == nil || !strings.Contains(err.Error(), "lua.traffic.routing.ConfigMap.") {
		t.Errorf("Initialize without a script: %v, want an error naming the ConfigMap key", err)
	}
}

// A script from the configuration ConfigMap that fails leaves the object untouched and names the kind.
func TestFailingScriptLeavesObjectAlone(t *testing.T) {
	f := newFixture(t)
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: trafficrouting.ConfigurationName, Namespace: configNamespace},
		Data: map[string]string{"lua.traffic.routing.ConfigMap.": `error("no route for " .. obj.canaryService)`}}
	_ = f.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: configNamespace}})
	if err := f.c.Create(t.Context(), cfg); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.c.Delete(context.Background(), cfg) }) // t.Context() is canceled by then
	target := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target", Namespace: f.ns}, Data: map[string]string{"k": "v"}}
	if err := f.c.Create(t.Context(), target); err != nil {
		t.Fatal(err)
	}
	p := f.provider(t, rolloutsv1beta1.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "target"})
	_, err := p.EnsureRoutes(t.Context(), trafficrouting.Routes{Weight: ptr.To[int32](10)})
	if err == nil || !strings.Contains(err.Error(), "no route for web-canary") || !strings.Contains(err.Error(), "ConfigMap.") {
		t.Errorf("EnsureRoutes with a failing script: %v", err)
	}
	after := &corev1.ConfigMap{}
	if err := f.c.Get(t.Context(), client.ObjectKeyFromObject(target), after); err != nil {
		t.Fatal(err)
	}
	if len(after.Annotations) != 0 {
		t.Errorf("the object was changed: %v", after.Annotations)
	}
}
