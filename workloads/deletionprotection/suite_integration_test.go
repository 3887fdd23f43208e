package deletionprotection

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/flotilla-dev/flotilla/rollout/module"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/webhooks"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// TestMain runs one API server (with Flotilla's CRDs) for the package; no controller-manager, so a deleted
// namespace stays Terminating, and no scheduler, so a pod stays Pending and goes at once when deleted.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// runs numbers the runs of the process (go test -count), so that the cluster-scoped names never repeat.
var runs atomic.Int32

// env is a manager serving the module's webhooks, which the API server calls through the chart's entries.
type env struct {
	c   client.Client
	run string
	// legacy is a Service labelled with a value that protects nothing, created before the webhooks were.
	legacy *corev1.Service
}

// start installs the chart's deletion protection webhooks (under a name of the run's) and runs a manager
// serving them with both gates on; the webhook certificates are the CertManager's, in URL mode. It returns
// once the API server refuses a dry-run deletion of an Always Service.
func start(t *testing.T) *env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, kruiseappsv1alpha1.AddToScheme)
	e := &env{c: managertest.DirectClient(t, clusterConfig, scheme), run: fmt.Sprintf("r%d-%d", runs.Add(1), time.Now().UnixNano()%100000)}
	certs := managertest.Namespace(t, e.c, "deletionprotection-certs")
	e.legacy = e.service(t, certs, "legacy", "yes")
	configuration := e.installConfiguration(t)
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	features := gates(t, "ResourcesDeletionProtection=true,DeletionProtectionForCRDCascadingGate=true")
	managertest.Start(t, clusterConfig, scheme, func(mgr ctrl.Manager) error {
		if err := SetupWithManager(t.Context(), mgr, module.Options{Features: features}); err != nil {
			return err
		}
		_, err := webhooks.Register(mgr, webhooks.Options{Namespace: certs, SecretName: "flotilla-webhook-certs", Host: "127.0.0.1",
			ValidatingWebhookConfigurationName: configuration}, conversion.NewRegistry())
		return err
	}, func(o *ctrl.Options) {
		o.WebhookServer = webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: ports[0], CertDir: t.TempDir()})
	})
	e.waitEffective(t, certs)
	return e
}

// installConfiguration creates the chart's validating webhooks of this module, as the chart installs them,
// under a configuration named for the run; it goes when the test ends.
func (e *env) installConfiguration(t *testing.T) string {
	t.Helper()
	_, validating := webhooktest.Configurations(t)
	served := append(slices.Clone(DeletionPaths), ValidateLabelPath)
	validating.Webhooks = slices.DeleteFunc(validating.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return !slices.Contains(served, *w.ClientConfig.Service.Path)
	})
	validating.Name = "flotilla-it-deletionprotection-" + e.run
	managertest.Create(t, e.c, validating)
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), validating) })
	return validating.Name
}

func (e *env) waitEffective(t *testing.T, ns string) {
	t.Helper()
	probe := e.service(t, ns, "probe", "Always")
	managertest.Eventually(t, itTimeout, "the API server calling the deletion webhook", func(ctx context.Context) (bool, error) {
		err := e.c.Delete(ctx, probe, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "forbidden by ResourcesDeletionProtection"), err
	})
}

func (e *env) service(t *testing.T, ns, name, protection string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{protectionKey: protection}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	managertest.Create(t, e.c, svc)
	return svc
}

const protectionKey = "policy.kruise.io/delete-protection"

// expectRefused checks that err is the API server's refusal of a deletion carrying want.
func expectRefused(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("deletion: %v, want it forbidden with %q", err, want)
	}
}

// relabel patches the object's protection label (an empty value removes it).
func (e *env) relabel(t *testing.T, obj client.Object, protection string) {
	t.Helper()
	value := `null`
	if protection != "" {
		value = `"` + protection + `"`
	}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"`+protectionKey+`":`+value+`}}}`))
	if err := e.c.Patch(t.Context(), obj, patch); err != nil {
		t.Fatal(err)
	}
}

// stillThere checks that a refused deletion left the object as it was: present and not being deleted.
func (e *env) stillThere(t *testing.T, obj client.Object) {
	t.Helper()
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	if obj.GetDeletionTimestamp() != nil {
		t.Fatalf("%s is being deleted", obj.GetName())
	}
}

// gone checks that a deletion went through: the object is gone or being deleted.
func (e *env) gone(t *testing.T, obj client.Object) {
	t.Helper()
	err := e.c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)
	if err == nil && obj.GetDeletionTimestamp() == nil {
		t.Fatalf("%s was not deleted", obj.GetName())
	}
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}
