package persistentpodstate

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/persistentpodstate/internal/controller"
)

const zone = "topology.kubernetes.io/zone"

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// reader is a cache holding objs, with the module's index.
func reader(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).
		WithIndex(&kruiseappsv1alpha1.PersistentPodState{}, controller.TargetIndex, controller.TargetKeys).Build()
}

// recorded is the PersistentPodState of StatefulSet web (apiVersion) in ns, requiring the zone, with a
// record of web-0 in z1.
func recorded(name, apiVersion string) *kruiseappsv1alpha1.PersistentPodState {
	p := &kruiseappsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	p.Spec.TargetReference = kruiseappsv1alpha1.TargetReference{APIVersion: apiVersion, Kind: "StatefulSet", Name: "web"}
	p.Spec.RequiredPersistentTopology = &kruiseappsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone}}
	p.Status.PodStates = map[string]kruiseappsv1alpha1.PodState{"web-0": {NodeName: "node-a", NodeTopologyLabels: map[string]string{zone: "z1"}}}
	return p
}

func statefulSetPod(name, apiVersion string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: []metav1.OwnerReference{
		{APIVersion: apiVersion, Kind: "StatefulSet", Name: "web", UID: "uid", Controller: ptr.To(true)}}}}
}

func TestInjector(t *testing.T) {
	i := &injector{reader: reader(t, recorded("web", "apps.kruise.io/v1alpha1"))}
	pod := statefulSetPod("web-0", "apps.kruise.io/v1beta1") // any version names the same StatefulSet
	changed, err := i.mutate(context.Background(), pod)
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	if diff := cmp.Diff(map[string]string{zone: "z1"}, pod.Spec.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
	if pod.Annotations[kruiseappsv1alpha1.InjectedPersistentPodStateKey] != "web" {
		t.Errorf("annotations %v", pod.Annotations)
	}
	for name, p := range map[string]*corev1.Pod{
		"a native StatefulSet's pod": statefulSetPod("web-0", "apps/v1"),
		"a pod without a record":     statefulSetPod("web-1", "apps.kruise.io/v1beta1"),
		"a pod of another kind of owner": func() *corev1.Pod {
			p := statefulSetPod("web-0", "apps/v1")
			p.OwnerReferences[0].Kind = "ReplicaSet"
			return p
		}(),
		"a pod nothing controls":         {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0"}},
		"a pod of another group's owner": func() *corev1.Pod { p := statefulSetPod("web-0", "example.com/v1"); return p }(),
	} {
		before := p.DeepCopy()
		if changed, err := i.mutate(context.Background(), p); err != nil || changed || !cmp.Equal(before, p) {
			t.Errorf("%s: changed %v, err %v", name, changed, err)
		}
	}
}

func newValidator(t *testing.T, objs ...client.Object) admission.Handler {
	t.Helper()
	return validating(reader(t, objs...), admission.NewDecoder(scheme(t)))
}

func TestValidatingWebhook(t *testing.T) {
	v := newValidator(t, recorded("other", "apps/v1"))
	body := `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"PersistentPodState","metadata":{"name":"web","namespace":"ns"},` +
		`"spec":{"targetRef":{"apiVersion":"apps/v1","kind":"StatefulSet","name":"db"},` +
		`"requiredPersistentTopology":{"nodeTopologyKeys":["` + zone + `"]}}}`
	req := webhooktest.Request("PersistentPodState", "persistentpodstates", "ns", "web", admissionv1.Create, body, "")
	if resp := v.Handle(context.Background(), req); !resp.Allowed {
		t.Errorf("a valid PersistentPodState refused: %v", resp.Result)
	}
	conflicting := strings.Replace(body, `"name":"db"`, `"name":"web"`, 1)
	req = webhooktest.Request("PersistentPodState", "persistentpodstates", "ns", "web", admissionv1.Create, conflicting, "")
	resp := v.Handle(context.Background(), req)
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(resp.Result.Message, "targetRef is in conflict with other PersistentPodState other") {
		t.Errorf("a second PersistentPodState of StatefulSet web: allowed=%v %v", resp.Allowed, resp.Result)
	}
}

// The chart's entry: the served path, creates and updates of persistentpodstates, failing closed like upstream;
// and the pod chain gets the module's mutation.
func TestRegisterWebhooks(t *testing.T) {
	srv, chain := webhooktest.NewServer(), &webhooks.PodChain{}
	if err := RegisterWebhooks(srv, reader(t), scheme(t), chain); err != nil {
		t.Fatal(err)
	}
	webhooktest.CheckKindWebhooks(t, "persistentpodstates",
		map[string]string{"vpersistentpodstate.kb.io": ValidatePersistentPodStatePath}, srv.Paths())
	pods := webhooktest.NewServer()
	if err := webhooks.RegisterPodChain(pods, scheme(t), chain); err != nil || len(pods.Paths()) != 1 {
		t.Errorf("the pod chain serves %v (%v): the module added no mutation", pods.Paths(), err)
	}
	if err := RegisterWebhooks(srv, nil, scheme(t), &webhooks.PodChain{}); err == nil {
		t.Error("registered without a reader")
	}
}
