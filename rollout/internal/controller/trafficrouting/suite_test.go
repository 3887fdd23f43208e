package trafficrouting_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	trcontroller "github.com/flotilla-dev/flotilla/rollout/internal/controller/trafficrouting"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/trafficrouting"
	"github.com/flotilla-dev/flotilla/trafficrouting/custom"
	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
)

// cfg is nil when the tests run with -short: no control plane, pure tests only.
var cfg *rest.Config

func TestMain(m *testing.M) {
	// The Istio VirtualService stand-in CRD is the custom provider's test CRD.
	opts := cluster.Options{CRDDirs: []string{"charts/flotilla/crds", "trafficrouting/custom/testdata/crds"}}
	os.Exit(managertest.Main(m, opts, &cfg))
}

func newScheme(t *testing.T) *runtime.Scheme {
	return managertest.Scheme(t, clientgoscheme.AddToScheme, rolloutsv1alpha1.AddToScheme, rolloutsv1beta1.AddToScheme)
}

// startController runs the TrafficRouting controller, with the custom (Lua) provider, until the test ends, and
// returns a direct client.
func startController(t *testing.T) client.Client {
	t.Helper()
	managertest.RequireCluster(t, cfg)
	managertest.Start(t, cfg, newScheme(t), func(mgr ctrl.Manager) error {
		registry := trafficrouting.NewRegistry()
		scripts := trafficrouting.ConfigMapScripts{Reader: mgr.GetAPIReader(), Namespace: "flotilla-system"}
		registry.Register("custom", custom.Factory(mgr.GetClient(), luavm.New(luavm.Options{}), scripts))
		r := &trcontroller.Reconciler{
			Client: mgr.GetClient(), Clock: clock.RealClock{}, Traffic: registry,
			Recorder: mgr.GetEventRecorder(trcontroller.ControllerName),
		}
		return r.SetupWithManager(mgr)
	})
	return managertest.DirectClient(t, cfg, newScheme(t))
}

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

// fixture is one test's namespace holding the VirtualService "web".
type fixture struct {
	c  client.Client
	ns string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	c := startController(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "trafficrouting-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	vs := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(virtualService), &vs.Object); err != nil {
		t.Fatal(err)
	}
	vs.SetNamespace(ns.Name)
	if err := c.Create(t.Context(), vs); err != nil {
		t.Fatal(err)
	}
	return fixture{c: c, ns: ns.Name}
}

// create makes the TrafficRouting "chain" routing the VirtualService named vsName with weight 20 and a 1s
// grace period.
func (f fixture) create(t *testing.T, vsName string) *rolloutsv1alpha1.TrafficRouting {
	t.Helper()
	tr := &rolloutsv1alpha1.TrafficRouting{
		ObjectMeta: metav1.ObjectMeta{Name: "chain", Namespace: f.ns},
		Spec: rolloutsv1alpha1.TrafficRoutingSpec{
			ObjectRef: []rolloutsv1alpha1.TrafficRoutingRef{{
				Service: "web", GracePeriodSeconds: 1,
				CustomNetworkRefs: []rolloutsv1alpha1.CustomNetworkRef{{APIVersion: "networking.istio.io/v1beta1", Kind: "VirtualService", Name: vsName}},
			}},
			Strategy: rolloutsv1alpha1.TrafficRoutingStrategy{Weight: ptr.To[int32](20)},
		},
	}
	if err := f.c.Create(t.Context(), tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// get reads the TrafficRouting; nil once it is gone.
func (f fixture) get(t *testing.T) *rolloutsv1alpha1.TrafficRouting {
	t.Helper()
	tr := &rolloutsv1alpha1.TrafficRouting{}
	err := f.c.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: "chain"}, tr)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err != nil {
		return nil
	}
	return tr
}

// update changes the TrafficRouting, retrying on conflicts with the controller's writes.
func (f fixture) update(t *testing.T, change func(*rolloutsv1alpha1.TrafficRouting)) {
	t.Helper()
	eventually(t, "update the TrafficRouting", func() (bool, string) {
		tr := f.get(t)
		change(tr)
		err := f.c.Update(t.Context(), tr)
		return err == nil, fmt.Sprint(err)
	})
}

// waitHealthy waits until the TrafficRouting reports Healthy for its current generation.
func (f fixture) waitHealthy(t *testing.T) *rolloutsv1alpha1.TrafficRouting {
	t.Helper()
	var tr *rolloutsv1alpha1.TrafficRouting
	eventually(t, "phase Healthy", func() (bool, string) {
		tr = f.get(t)
		if tr == nil {
			return false, "gone"
		}
		return tr.Status.Phase == rolloutsv1alpha1.TrafficRoutingPhaseHealthy && tr.Status.ObservedGeneration == tr.Generation, describe(tr)
	})
	return tr
}

func describe(tr *rolloutsv1alpha1.TrafficRouting) string {
	return fmt.Sprintf("phase=%s generation=%d observed=%d finalizers=%v message=%q",
		tr.Status.Phase, tr.Generation, tr.Status.ObservedGeneration, tr.Finalizers, tr.Status.Message)
}

func (f fixture) virtualService(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	vs := &unstructured.Unstructured{}
	vs.SetAPIVersion("networking.istio.io/v1beta1")
	vs.SetKind("VirtualService")
	if err := f.c.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: "web"}, vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

// snapshot is the VirtualService's spec, labels and annotations.
func (f fixture) snapshot(t *testing.T) string {
	t.Helper()
	vs := f.virtualService(t)
	data, err := json.Marshal(map[string]any{"spec": vs.Object["spec"], "labels": vs.GetLabels(), "annotations": vs.GetAnnotations()})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// routes lists the VirtualService's http routes as "match -> host[/subset][:weight], ..." lines.
func (f fixture) routes(t *testing.T) string {
	t.Helper()
	http, _, _ := unstructured.NestedSlice(f.virtualService(t).Object, "spec", "http")
	var out []string
	for _, h := range http {
		rule, _ := h.(map[string]any)
		line := ""
		if m, ok := rule["match"]; ok {
			data, _ := json.Marshal(m)
			line = string(data) + " -> "
		}
		if hs, ok := rule["headers"]; ok {
			data, _ := json.Marshal(hs)
			line += string(data) + " "
		}
		routes, _, _ := unstructured.NestedSlice(rule, "route")
		var dests []string
		for _, r := range routes {
			dests = append(dests, destination(r))
		}
		out = append(out, line+strings.Join(dests, ","))
	}
	return strings.Join(out, "\n")
}

func destination(r any) string {
	route, _ := r.(map[string]any)
	dest, _, _ := unstructured.NestedString(route, "destination", "host")
	if subset, _, _ := unstructured.NestedString(route, "destination", "subset"); subset != "" {
		dest += "/" + subset
	}
	if w, ok := route["weight"]; ok {
		dest += fmt.Sprintf(":%v", w)
	}
	return dest
}

// events lists the "Type Reason" of the events regarding the TrafficRouting, and their notes.
func (f fixture) events(t *testing.T) (reasons, notes []string) {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := f.c.List(t.Context(), list, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Regarding.Kind == "TrafficRouting" && e.Regarding.Name == "chain" {
			reasons = append(reasons, e.Type+" "+e.Reason)
			notes = append(notes, e.Note)
		}
	}
	return reasons, notes
}

// waitEvent waits for an event of type and reason on the TrafficRouting whose note contains note.
func (f fixture) waitEvent(t *testing.T, typ, reason, note string) {
	t.Helper()
	eventually(t, typ+" event "+reason, func() (bool, string) {
		reasons, notes := f.events(t)
		for i := range reasons {
			if reasons[i] == typ+" "+reason && strings.Contains(notes[i], note) {
				return true, ""
			}
		}
		return false, fmt.Sprint(reasons, notes)
	})
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true,
		func(context.Context) (bool, error) {
			ok, msg := cond()
			last = msg
			return ok, nil
		})
	if err != nil {
		t.Fatalf("%s: not reached; last: %s", what, last)
	}
}
