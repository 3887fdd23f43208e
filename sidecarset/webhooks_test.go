package sidecarset

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	sidecarsetadmission "github.com/flotilla-dev/flotilla/sidecarset/admission"
	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	"github.com/flotilla-dev/flotilla/sidecarset/internal/podwebhook"
	"github.com/flotilla-dev/flotilla/webhooks"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := kruiseappsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func testHandlers(t *testing.T, opts WebhookOptions, objs ...client.Object) map[string]admission.Handler {
	t.Helper()
	s := testScheme(t)
	reader := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	return handlers(reader, admission.NewDecoder(s), opts)
}

func request(op admissionv1.Operation, body, old string) admission.Request {
	return webhooktest.Request("SidecarSet", "sidecarsets", "", "scs", op, body, old)
}

// userSet is the seed's SidecarSet as a user writes it, with a field no Go type knows.
const userSet = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"SidecarSet","metadata":{"name":"scs"},` +
	`"spec":{"selector":{"matchLabels":{"app":"nginx"}},"updateStrategy":{"type":"RollingUpdate","maxUnavailable":1},` +
	`"containers":[{"name":"scs","image":"busybox:1.35.0","command":["sleep","999d"],"futureField":"kept",` +
	`"volumeMounts":[{"name":"log","mountPath":"/var/log"}]}],"volumes":[{"name":"log","emptyDir":{}}]}}`

func TestDefaultingWebhook(t *testing.T) {
	resp := testHandlers(t, WebhookOptions{})[MutateSidecarSetPath].Handle(context.Background(), request(admissionv1.Create, userSet, ""))
	if !resp.Allowed {
		t.Fatalf("refused: %v", resp.Result)
	}
	doc := webhooktest.ApplyJSONPatch(t, userSet, resp)
	want := &kruiseappsv1alpha1.SidecarSet{}
	if err := admission.NewDecoder(testScheme(t)).DecodeRaw(request(admissionv1.Create, userSet, "").Object, want); err != nil {
		t.Fatal(err)
	}
	sidecarsetadmission.Default(want, nil)
	hash, _ := inject.Hash(want)
	for path, value := range map[string]any{
		"spec.updateStrategy.partition": float64(0), "spec.revisionHistoryLimit": float64(10),
		"spec.containers.0.podInjectPolicy": "BeforeAppContainer", "spec.containers.0.upgradeStrategy.upgradeType": "ColdUpgrade",
		"spec.containers.0.imagePullPolicy": "IfNotPresent", "spec.containers.0.futureField": "kept",
		"metadata.annotations.kruise.io/sidecarset-hash": hash,
	} {
		if got := lookup(doc, path); got != value {
			t.Errorf("%s = %v, want %v", path, got, value)
		}
	}
	dup := strings.Replace(userSet, `"containers":[{`, `"containers":[{"name":"scs","image":"busybox"},{`, 1)
	if resp := testHandlers(t, WebhookOptions{})[MutateSidecarSetPath].Handle(context.Background(), request(admissionv1.Create, dup, "")); !resp.Allowed {
		t.Errorf("containers of one name, left for validation to name: refused %v", resp.Result)
	}
}

// lookup is webhooktest.JSONLookup for paths whose last key holds dots (annotation keys).
func lookup(doc any, path string) any {
	if head, key, ok := strings.Cut(path, "metadata.annotations."); ok && head == "" {
		annotations, _ := webhooktest.JSONLookup(doc, "metadata.annotations").(map[string]any)
		return annotations[key]
	}
	return webhooktest.JSONLookup(doc, path)
}

func TestValidatingWebhook(t *testing.T) {
	other := &kruiseappsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "logging"},
		Spec: kruiseappsv1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Containers: []kruiseappsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "scs", Image: "busybox"}}},
		},
	}
	h := testHandlers(t, WebhookOptions{}, other)[ValidateSidecarSetPath]
	resp := h.Handle(context.Background(), request(admissionv1.Create, defaulted(t, userSet), ""))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(resp.Result.Message, `spec.containers[0].name: Invalid value: "scs": container scs already exist in logging`) {
		t.Errorf("a container another SidecarSet injects into the same pods: allowed=%v %v", resp.Allowed, resp.Result)
	}
	h = testHandlers(t, WebhookOptions{})[ValidateSidecarSetPath]
	if resp := h.Handle(context.Background(), request(admissionv1.Create, defaulted(t, userSet), "")); !resp.Allowed {
		t.Errorf("a valid SidecarSet refused: %v", resp.Result)
	}
	added := strings.Replace(userSet, `"containers":[{`, `"containers":[{"name":"new","image":"busybox"},{`, 1)
	resp = h.Handle(context.Background(), request(admissionv1.Update, defaulted(t, added), defaulted(t, userSet)))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "spec.containers[0].name: Forbidden: container new is not found in the stored SidecarSet") {
		t.Errorf("an added container: allowed=%v %v", resp.Allowed, resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Create, `{"spec":`, "")); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable body: allowed=%v %v", resp.Allowed, resp.Result)
	}
}

// defaulted is body as the defaulting webhook leaves it.
func defaulted(t *testing.T, body string) string {
	t.Helper()
	resp := testHandlers(t, WebhookOptions{})[MutateSidecarSetPath].Handle(context.Background(), request(admissionv1.Create, body, ""))
	if !resp.Allowed {
		t.Fatalf("defaulting refused: %v", resp.Result)
	}
	doc := webhooktest.ApplyJSONPatch(t, body, resp)
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// The validating webhook reads the whitelist ConfigMap of the configuration namespace and the labels of the
// namespaces compared with namespaceSelectors.
func TestValidatingWebhookReadsTheCluster(t *testing.T) {
	patched := strings.Replace(userSet, `"volumes":`, `"patchPodMetadata":[{"annotations":{"mesh.io/config":"x"}}],"volumes":`, 1)
	whitelist := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: sidecarsetadmission.WhitelistConfigMap},
		Data:       map[string]string{sidecarsetadmission.WhitelistKey: `{"rules":[{"allowedAnnotationKeyExprs":["^mesh\\.io/"]}]}`},
	}
	opts := WebhookOptions{ConfigurationNamespace: "flotilla-system"}
	if resp := testHandlers(t, opts, whitelist)[ValidateSidecarSetPath].Handle(context.Background(),
		request(admissionv1.Create, defaulted(t, patched), "")); !resp.Allowed {
		t.Errorf("a whitelisted annotation refused: %v", resp.Result)
	}
	resp := testHandlers(t, opts)[ValidateSidecarSetPath].Handle(context.Background(), request(admissionv1.Create, defaulted(t, patched), ""))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "spec.patchPodMetadata: Forbidden: SidecarSet patch metadata whitelist not found") {
		t.Errorf("no whitelist: allowed=%v %v", resp.Allowed, resp.Result)
	}

	inProd := &kruiseappsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "logging"},
		Spec: kruiseappsv1alpha1.SidecarSetSpec{
			Namespace:  "prod",
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Containers: []kruiseappsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "scs", Image: "busybox"}}},
		},
	}
	selecting := func(env string) string {
		return strings.Replace(userSet, `"selector":`, `"namespaceSelector":{"matchLabels":{"env":"`+env+`"}},"selector":`, 1)
	}
	prod := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{"env": "prod"}}}
	h := testHandlers(t, opts, inProd, prod)[ValidateSidecarSetPath]
	if resp := h.Handle(context.Background(), request(admissionv1.Create, defaulted(t, selecting("dev")), "")); !resp.Allowed {
		t.Errorf("namespaces apart refused: %v", resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Create, defaulted(t, selecting("prod")), "")); resp.Allowed {
		t.Error("a namespaceSelector selecting the other's namespace allowed")
	}
}

func TestValidatingWebhookFailsWhenTheClusterCannotBeRead(t *testing.T) {
	s := testScheme(t)
	reader := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return context.DeadlineExceeded
		},
	}).Build()
	h := handlers(reader, admission.NewDecoder(s), WebhookOptions{})[ValidateSidecarSetPath]
	if resp := h.Handle(context.Background(), request(admissionv1.Create, userSet, "")); resp.Allowed || resp.Result.Code != http.StatusInternalServerError {
		t.Errorf("unreadable SidecarSets: allowed=%v %v", resp.Allowed, resp.Result)
	}
}

func TestRegisterWebhooks(t *testing.T) {
	srv := webhooktest.NewServer()
	s := testScheme(t)
	if err := RegisterWebhooks(srv, fake.NewClientBuilder().WithScheme(s).Build(), s, WebhookOptions{}); err != nil {
		t.Fatal(err)
	}
	webhooktest.CheckKindWebhooks(t, "sidecarsets",
		map[string]string{"msidecarset.kb.io": MutateSidecarSetPath, "vsidecarset.kb.io": ValidateSidecarSetPath}, srv.Paths())
	if err := RegisterWebhooks(srv, nil, s, WebhookOptions{}); err == nil {
		t.Error("registered without a reader")
	}
}

// The chart calls the pod chain for every new pod exactly once: msidecarset-pod.kb.io takes the pods
// mpod.kb.io leaves, never blocks, and skips upstream's namespaces.
func TestPodWebhookConfiguration(t *testing.T) {
	mutating, _ := webhooktest.Configurations(t)
	byName := map[string]admissionregistrationv1.MutatingWebhook{}
	for _, w := range mutating.Webhooks {
		byName[w.Name] = w
	}
	pod, sidecars := byName["mpod.kb.io"], byName["msidecarset-pod.kb.io"]
	if len(pod.MatchConditions) != 1 || len(sidecars.MatchConditions) != 2 {
		t.Fatalf("match conditions %v and %v, want one, and two", pod.MatchConditions, sidecars.MatchConditions)
	}
	if c := sidecars.MatchConditions[1]; c.Name != podwebhook.ConditionName || c.Expression != podwebhook.LaunchPriorityOnly {
		t.Errorf("condition %+v, want %s with launch priority only until the manager sees a SidecarSet", c, podwebhook.ConditionName)
	}
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if got, want := squash(sidecars.MatchConditions[0].Expression), "!("+squash(pod.MatchConditions[0].Expression)+")"; got != want {
		t.Errorf("msidecarset-pod.kb.io matches %s, want the complement of mpod.kb.io's: %s", got, want)
	}
	if got := webhooktest.ServicePath(t, sidecars.Name, sidecars.ClientConfig); got != webhooks.MutatePodPath {
		t.Errorf("path %s", got)
	}
	if sidecars.FailurePolicy == nil || *sidecars.FailurePolicy != admissionregistrationv1.Ignore || sidecars.ObjectSelector != nil {
		t.Errorf("failurePolicy %v, objectSelector %v: a stopped manager must not block pods", sidecars.FailurePolicy, sidecars.ObjectSelector)
	}
	if diff := cmp.Diff(pod.Rules, sidecars.Rules); diff != "" {
		t.Errorf("rules differ from mpod.kb.io's (-mpod +msidecarset-pod):\n%s", diff)
	}
	if diff := cmp.Diff(pod.NamespaceSelector, sidecars.NamespaceSelector); diff != "" {
		t.Errorf("namespaces differ from mpod.kb.io's (-mpod +msidecarset-pod):\n%s", diff)
	}
}
