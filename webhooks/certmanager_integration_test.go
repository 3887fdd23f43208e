package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	rolloutconversion "github.com/flotilla-dev/flotilla/rollout/conversion"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{CRDDirs: []string{"webhooks/testdata/crds", "charts/flotilla/crds"}}, &clusterConfig))
}

const (
	itSecret    = "flotilla-webhook-certs"
	itWidgets   = "widgets.webhooktest.flotilla.dev"
	itGadgets   = "gadgets.webhooktest.flotilla.dev"
	itRollouts  = "rollouts.rollouts.kruise.io"
	probePath   = "/validate-probe"
	probeLabel  = "webhooks-test.flotilla.dev/probe"
	probeDenial = "reached the flotilla test webhook"
	renewBefore = 24 * time.Hour
	itTimeout   = 30 * time.Second
)

// The namespace and the webhook configurations of a run, named anew for each run in one process (go test
// -count=2): the namespace of the run before may still be terminating.
var (
	itNamespace, itMutating, itValidating string
	itRuns                                atomic.Int32
)

func nameFixtures() {
	run := itRuns.Add(1)
	itNamespace = fmt.Sprintf("webhook-certs-it-%d", run)
	itMutating = fmt.Sprintf("flotilla-it-mutating-%d", run)
	itValidating = fmt.Sprintf("flotilla-it-validating-%d", run)
}

// itEnv is one running manager with a CertManager in URL mode.
type itEnv struct {
	c     client.Client
	cm    *CertManager
	clock *clocktesting.FakeClock
	port  int
	dir   string
}

func TestCertManagerIntegration(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := startCertManager(ctx, t)

	t.Run("first sync", func(t *testing.T) { env.assertSynced(ctx, t) })
	t.Run("api server calls the webhook", func(t *testing.T) { env.assertAdmissionReached(ctx, t) })
	t.Run("api server converts through the webhook", func(t *testing.T) { env.assertConversion(ctx, t) })
	t.Run("serving certificate renewal", func(t *testing.T) { env.assertServingRenewal(ctx, t) })
	t.Run("CA rotation", func(t *testing.T) { env.assertCARotation(ctx, t) })
}

func itScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, rolloutsv1alpha1.AddToScheme, rolloutsv1beta1.AddToScheme,
	} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func startCertManager(ctx context.Context, t *testing.T) *itEnv {
	t.Helper()
	scheme := itScheme(t)
	c, err := client.New(clusterConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	env := &itEnv{c: c, clock: clocktesting.NewFakeClock(time.Now()), port: mustFreePort(t), dir: t.TempDir()}
	nameFixtures()
	createFixtures(ctx, t, c)
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: env.port, CertDir: env.dir})
	mgr, err := manager.New(clusterConfig, manager.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0", WebhookServer: srv,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Register(probePath, &admission.Webhook{Handler: admission.HandlerFunc(denyProbe)})
	conversions := conversion.NewRegistry()
	if err := rolloutconversion.Register(scheme, conversions); err != nil {
		t.Fatal(err)
	}
	env.cm, err = Register(mgr, Options{
		Namespace: itNamespace, SecretName: itSecret, Host: "127.0.0.1",
		MutatingWebhookConfigurationName: itMutating, ValidatingWebhookConfigurationName: itValidating,
		ConversionCRDs: []string{itWidgets, itGadgets, itRollouts, "absent.webhooktest.flotilla.dev"},
		RenewBefore:    renewBefore, CAValidity: 1000 * time.Hour, CertValidity: 100 * time.Hour,
		ResyncPeriod: time.Hour, Clock: env.clock,
	}, conversions)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	runManager(ctx, t, mgr)
	return env
}

func runManager(ctx context.Context, t *testing.T, mgr manager.Manager) {
	t.Helper()
	mgrCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

func denyProbe(context.Context, admission.Request) admission.Response {
	return admission.Denied(probeDenial)
}

func mustFreePort(t *testing.T) int {
	t.Helper()
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// createFixtures creates the namespace and two webhook configurations
// installed as a chart would, pointing at a Service that does not exist.
// Only the probe webhook can match anything: objects carrying probeLabel.
func createFixtures(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: itNamespace}}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: itMutating},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mdummy.flotilla.dev", ClientConfig: installedClientConfig("/mutate-dummy"),
			Rules: podRules(), ObjectSelector: matchNothing(), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"}, FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: itValidating},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{validatingWebhook("vdummy.flotilla.dev", "/validate-dummy", matchNothing()), probeWebhook()},
	}
	for _, obj := range []client.Object{ns, mutating, validating} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
	}
}

func installedClientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: "flotilla-system", Name: "flotilla-webhook-service", Path: ptr.To(path),
	}}
}

func validatingWebhook(name, path string, selector *metav1.LabelSelector) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: name, ClientConfig: installedClientConfig(path), Rules: podRules(), ObjectSelector: selector,
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
	}
}

// probeWebhook fails closed for ConfigMaps labelled probeLabel in the test
// namespace, so an API server that cannot reach or trust the server
// reports a call error instead of the handler's denial.
func probeWebhook() admissionregistrationv1.ValidatingWebhook {
	w := validatingWebhook("vprobe.flotilla.dev", probePath, &metav1.LabelSelector{MatchLabels: map[string]string{probeLabel: "true"}})
	w.Rules = []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": itNamespace}}
	w.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	return w
}

func podRules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
}

func matchNothing() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"webhooks-test.flotilla.dev/never": "matches"}}
}

func (e *itEnv) secretBundle(ctx context.Context, t *testing.T) Bundle {
	t.Helper()
	s := &corev1.Secret{}
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: itNamespace, Name: itSecret}, s); err != nil {
		t.Fatalf("reading Secret: %v", err)
	}
	return bundleFromSecret(s)
}

func (e *itEnv) url(path string) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", e.port, path)
}

func (e *itEnv) assertSynced(ctx context.Context, t *testing.T) {
	eventually(ctx, t, "CertManager ready", func() error { return e.cm.Ready() })
	b := e.secretBundle(ctx, t)
	if err := ValidateBundle(b, []string{"127.0.0.1"}, e.clock.Now(), renewBefore); err != nil {
		t.Fatalf("stored bundle invalid: %v", err)
	}
	e.assertFiles(t, b)
	e.assertInjected(ctx, t, b.CACert)
	e.assertServed(ctx, t, b)
	gadgets := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.c.Get(ctx, types.NamespacedName{Name: itGadgets}, gadgets); err != nil {
		t.Fatal(err)
	}
	if conv := gadgets.Spec.Conversion; conv != nil && conv.Strategy != apiextensionsv1.NoneConverter {
		t.Errorf("CRD without webhook conversion was changed: %+v", conv)
	}
}

func (e *itEnv) assertFiles(t *testing.T, b Bundle) {
	t.Helper()
	for name, want := range map[string][]byte{DefaultCertName: b.Cert, DefaultKeyName: b.Key} {
		got, err := os.ReadFile(filepath.Join(e.dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s does not hold the stored material (err %v)", name, err)
		}
	}
}

// assertInjected checks every webhook and conversion clientConfig.
func (e *itEnv) assertInjected(ctx context.Context, t *testing.T, caBundle []byte) {
	t.Helper()
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := e.c.Get(ctx, types.NamespacedName{Name: itMutating}, mutating); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Get(ctx, types.NamespacedName{Name: itValidating}, validating); err != nil {
		t.Fatal(err)
	}
	e.checkClientConfig(t, mutating.Webhooks[0].ClientConfig, "/mutate-dummy", caBundle)
	e.checkClientConfig(t, validating.Webhooks[0].ClientConfig, "/validate-dummy", caBundle)
	e.checkClientConfig(t, validating.Webhooks[1].ClientConfig, probePath, caBundle)
	for _, name := range []string{itWidgets, itRollouts} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := e.c.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		cc := crd.Spec.Conversion.Webhook.ClientConfig
		if cc.Service != nil || ptr.Deref(cc.URL, "") != e.url(ConvertPath) || !bytes.Equal(cc.CABundle, caBundle) {
			t.Errorf("CRD %s conversion clientConfig = url %q service %v, caBundle injected %v",
				name, ptr.Deref(cc.URL, ""), cc.Service, bytes.Equal(cc.CABundle, caBundle))
		}
	}
}

func (e *itEnv) checkClientConfig(t *testing.T, cc admissionregistrationv1.WebhookClientConfig, path string, caBundle []byte) {
	t.Helper()
	if cc.Service != nil || ptr.Deref(cc.URL, "") != e.url(path) || !bytes.Equal(cc.CABundle, caBundle) {
		t.Errorf("clientConfig = url %q service %v, caBundle injected %v; want url %q",
			ptr.Deref(cc.URL, ""), cc.Service, bytes.Equal(cc.CABundle, caBundle), e.url(path))
	}
}

// assertServed waits until the server presents the stored certificate and
// checks it against the injected CA bundle, at the fake clock's time.
func (e *itEnv) assertServed(ctx context.Context, t *testing.T, b Bundle) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b.CACert) {
		t.Fatal("CA bundle holds no certificate")
	}
	want := mustCerts(t, b.Cert)[0]
	eventually(ctx, t, "server presents the stored certificate", func() error {
		cfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", Time: e.clock.Now, MinVersion: tls.VersionTLS12}
		conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", e.port), cfg)
		if err != nil {
			return err
		}
		defer conn.Close() // handshake already checked
		if !conn.ConnectionState().PeerCertificates[0].Equal(want) {
			return fmt.Errorf("server still presents serial %s", conn.ConnectionState().PeerCertificates[0].SerialNumber)
		}
		return nil
	})
}

// assertAdmissionReached proves the API server trusts the injected CA and
// uses the injected URL: it gets the handler's denial.
func (e *itEnv) assertAdmissionReached(ctx context.Context, t *testing.T) {
	eventually(ctx, t, "API server calls the probe webhook", func() error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			GenerateName: "probe-", Namespace: itNamespace, Labels: map[string]string{probeLabel: "true"},
		}}
		err := e.c.Create(ctx, cm)
		if err == nil {
			return fmt.Errorf("ConfigMap %s admitted without the webhook", cm.Name)
		}
		if !strings.Contains(err.Error(), probeDenial) {
			return err
		}
		return nil
	})
}

// assertConversion stores a v1beta1 Rollout and reads it as v1alpha1,
// which the API server can only do through /convert.
func (e *itEnv) assertConversion(ctx context.Context, t *testing.T) {
	hub := &rolloutsv1beta1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "conv", Namespace: itNamespace},
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{
				Steps: []rolloutsv1beta1.CanaryStep{{Replicas: ptr.To(intstr.FromString("20%")), TrafficRoutingStrategy: rolloutsv1beta1.TrafficRoutingStrategy{Traffic: ptr.To("20%")}}},
			}},
		},
	}
	eventually(ctx, t, "creating a v1beta1 Rollout", func() error { return e.c.Create(ctx, hub) })
	spoke := &unstructured.Unstructured{}
	spoke.SetAPIVersion(rolloutsv1alpha1.GroupVersion.String())
	spoke.SetKind("Rollout")
	eventually(ctx, t, "reading the Rollout as v1alpha1", func() error {
		return e.c.Get(ctx, client.ObjectKeyFromObject(hub), spoke)
	})
	name, _, _ := unstructured.NestedString(spoke.Object, "spec", "objectRef", "workloadRef", "name")
	weight, _, _ := unstructured.NestedSlice(spoke.Object, "spec", "strategy", "canary", "steps")
	if name != "web" || len(weight) != 1 {
		t.Errorf("converted Rollout: workloadRef name %q, %d steps; want web, 1", name, len(weight))
	}
}

// assertServingRenewal moves the clock into the serving certificate's
// renewal window: a new certificate from the same CA is stored, written
// and served, and the configurations are left untouched.
func (e *itEnv) assertServingRenewal(ctx context.Context, t *testing.T) {
	before := e.secretBundle(ctx, t)
	versions := e.configVersions(ctx, t)
	e.stepInto(ctx, t, mustCerts(t, before.Cert)[0].NotAfter)
	var after Bundle
	eventually(ctx, t, "serving certificate renewed", func() error {
		after = e.secretBundle(ctx, t)
		if bytes.Equal(after.Cert, before.Cert) {
			return fmt.Errorf("serving certificate not renewed yet")
		}
		return e.filesHold(after)
	})
	if !bytes.Equal(after.CACert, before.CACert) || !bytes.Equal(after.CAKey, before.CAKey) {
		t.Error("CA changed on a serving certificate renewal")
	}
	if err := ValidateBundle(after, []string{"127.0.0.1"}, e.clock.Now(), renewBefore); err != nil {
		t.Errorf("renewed bundle invalid: %v", err)
	}
	e.assertServed(ctx, t, after)
	if got := e.configVersions(ctx, t); got != versions {
		t.Errorf("configurations written although nothing in them changed: %v -> %v", versions, got)
	}
}

// assertCARotation moves the clock into the CA's renewal window: a new CA
// is stored with the old one still trusted, and re-injected everywhere.
func (e *itEnv) assertCARotation(ctx context.Context, t *testing.T) {
	before := e.secretBundle(ctx, t)
	oldCA := mustCerts(t, before.CACert)[0]
	e.stepInto(ctx, t, oldCA.NotAfter)
	var after Bundle
	eventually(ctx, t, "CA rotated", func() error {
		after = e.secretBundle(ctx, t)
		if bytes.Equal(after.CACert, before.CACert) {
			return fmt.Errorf("CA not rotated yet")
		}
		return e.filesHold(after)
	})
	cas := mustCerts(t, after.CACert)
	if len(cas) != 2 || cas[0].Equal(oldCA) || !cas[1].Equal(oldCA) {
		t.Errorf("CA bundle should be [new CA, old CA], has %d certificates", len(cas))
	}
	e.assertInjected(ctx, t, after.CACert)
	e.assertServed(ctx, t, after)
}

// stepInto advances the fake clock to just inside the renewal window of a
// certificate ending at notAfter, once the CertManager waits on the clock.
func (e *itEnv) stepInto(ctx context.Context, t *testing.T, notAfter time.Time) {
	t.Helper()
	eventually(ctx, t, "CertManager waiting for its resync", func() error {
		if !e.clock.HasWaiters() {
			return fmt.Errorf("no waiter on the clock")
		}
		return nil
	})
	e.clock.SetTime(notAfter.Add(-renewBefore).Add(time.Minute))
}

func (e *itEnv) filesHold(b Bundle) error {
	for name, want := range map[string][]byte{DefaultCertName: b.Cert, DefaultKeyName: b.Key} {
		got, err := os.ReadFile(filepath.Join(e.dir, name))
		if err != nil || !bytes.Equal(got, want) {
			return fmt.Errorf("%s not written yet: %w", name, err)
		}
	}
	return nil
}

func (e *itEnv) configVersions(ctx context.Context, t *testing.T) string {
	t.Helper()
	var parts []string
	for _, obj := range []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: itMutating}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: itValidating}},
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: itWidgets}},
	} {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, obj.GetResourceVersion())
	}
	return strings.Join(parts, ",")
}

// eventually polls cond until it returns nil, failing the test with the
// last error after itTimeout.
func eventually(ctx context.Context, t *testing.T, what string, cond func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, itTimeout, true, func(context.Context) (bool, error) {
		last = cond()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last error: %v)", what, err, last)
	}
}
