package podunavailablebudget

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/webhooks"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget/internal/guard"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// TestMain runs one control plane for the package, with the chart's CRDs.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

// servedWebhooks are the chart's webhooks of the module, installed as the chart installs them.
var servedWebhooks = []string{"vpod.kb.io", "vpodeviction.kb.io", "vpodunavailablebudget.kb.io"}

// runs numbers the managers of the process, so that their objects' names never repeat (go test -count=2).
var runs atomic.Int32

// env is a running module with its webhooks served through the API server: a direct client and a clientset
// for the test's own reads and writes.
type env struct {
	c    client.Client
	kube kubernetes.Interface
	ns   string
}

// start runs the module as the manager does (its controller, its check in the pod validating chain, its
// webhook, the certificate manager pointing the chart's webhook configuration at this process over TLS) with
// both PodUnavailableBudget gates on, until the test ends, and returns a namespace of the test's.
func start(t *testing.T) *env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme, kruiseappsv1beta1.AddToScheme,
		kruisepolicyv1alpha1.AddToScheme)
	e := &env{c: managertest.DirectClient(t, clusterConfig, scheme), kube: kubernetes.NewForConfigOrDie(clusterConfig)}
	run := runs.Add(1)
	certs := managertest.Namespace(t, e.c, "pub-certs")
	configuration := installWebhooks(t, e.c, fmt.Sprintf("flotilla-pub-it-%d", run))
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: ports[0], CertDir: t.TempDir()})
	var cm *webhooks.CertManager
	managertest.Start(t, clusterConfig, scheme, func(mgr ctrl.Manager) error {
		var err error
		cm, err = setupLikeTheManager(mgr, certs, configuration)
		return err
	}, func(o *ctrl.Options) { o.WebhookServer = srv })
	managertest.Eventually(t, itTimeout, "the webhook certificates", func(context.Context) (bool, error) { return cm.Ready() == nil, cm.Ready() })
	e.ns = managertest.NamespaceWithServiceAccount(t, e.c, "pub")
	return e
}

// setupLikeTheManager wires the module, the pod validating chain and the certificates as
// rollout/cmd/manager does.
func setupLikeTheManager(mgr ctrl.Manager, certs, configuration string) (*webhooks.CertManager, error) {
	gates, err := feature.NewGate()
	if err != nil {
		return nil, err
	}
	if err := gates.Set("PodUnavailableBudgetDeleteGate=true,PodUnavailableBudgetUpdateGate=true"); err != nil {
		return nil, err
	}
	chain := &webhooks.PodValidationChain{}
	opts := module.Options{Features: feature.Resolve(gates), PodValidations: chain, InPlaceUpdates: &module.InPlaceUpdateChecks{}}
	if err := SetupWithManager(context.Background(), mgr, opts); err != nil {
		return nil, err
	}
	if err := webhooks.RegisterPodValidationChain(mgr.GetWebhookServer(), mgr.GetScheme(), mgr.GetClient(), chain); err != nil {
		return nil, err
	}
	return webhooks.Register(mgr, webhooks.Options{Namespace: certs, SecretName: "flotilla-webhook-certs", Host: "127.0.0.1",
		ValidatingWebhookConfigurationName: configuration}, conversion.NewRegistry())
}

// installWebhooks creates the chart's validating webhooks of the module under name, deleted when the test
// ends (they fail closed, and the manager that answers them stops with the test).
func installWebhooks(t *testing.T, c client.Client, name string) string {
	t.Helper()
	_, chart := webhooktest.Configurations(t)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, w := range chart.Webhooks {
		if slices.Contains(servedWebhooks, w.Name) {
			cfg.Webhooks = append(cfg.Webhooks, w)
		}
	}
	if len(cfg.Webhooks) != len(servedWebhooks) {
		t.Fatalf("the chart has %d of the webhooks %v", len(cfg.Webhooks), servedWebhooks)
	}
	managertest.Create(t, c, cfg)
	t.Cleanup(func() { _ = c.Delete(context.Background(), cfg) })
	return name
}

// budget creates a PodUnavailableBudget of the test's over the pods labelled app=<app>, counting total
// replicas (pub.kruise.io/protect-total-replicas: they have no workload).
func (e *env) budget(t *testing.T, app string, maxUnavailable, total int) *kruisepolicyv1alpha1.PodUnavailableBudget {
	t.Helper()
	v := intstr.FromInt(maxUnavailable)
	pub := &kruisepolicyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: e.ns,
			Annotations: map[string]string{kruisepolicyv1alpha1.PubProtectTotalReplicasAnnotation: fmt.Sprint(total)}},
		Spec: kruisepolicyv1alpha1.PodUnavailableBudgetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, MaxUnavailable: &v},
	}
	managertest.Create(t, e.c, pub)
	return pub
}

// readyPods creates n running, ready pods labelled app=<app>, named <app>-<i>. They are never scheduled, so a
// deletion removes them at once.
func (e *env) readyPods(t *testing.T, app string, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, i), Namespace: e.ns, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:v1"}}},
		}
		managertest.Create(t, e.c, pod)
		// A patch: the controller may have marked the pod meanwhile.
		ready := client.RawPatch(types.MergePatchType, []byte(`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`))
		if err := e.c.Status().Patch(context.Background(), pod, ready); err != nil {
			t.Fatal(err)
		}
		names[i] = pod.Name
	}
	return names
}

// waitStatus waits until the budget's status of its generation has the counts given.
func (e *env) waitStatus(t *testing.T, pub *kruisepolicyv1alpha1.PodUnavailableBudget, allowed, current, desired, total int32) {
	t.Helper()
	got := &kruisepolicyv1alpha1.PodUnavailableBudget{}
	managertest.Eventually(t, itTimeout, fmt.Sprintf("budget %s at allowed %d, current %d, desired %d, total %d", pub.Name,
		allowed, current, desired, total), func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(pub), got); err != nil {
			return false, err
		}
		st := got.Status
		return st.ObservedGeneration == got.Generation && st.UnavailableAllowed == allowed && st.CurrentAvailable == current &&
			st.DesiredAvailable == desired && st.TotalReplicas == total, fmt.Errorf("status %+v", st)
	})
}

// waitMarked waits until every pod carries the related-pub annotation of the budget, which the webhook
// configuration calls the manager for.
func (e *env) waitMarked(t *testing.T, budget string, pods []string) {
	t.Helper()
	managertest.Eventually(t, itTimeout, "the pods marked with their budget", func(ctx context.Context) (bool, error) {
		for _, name := range pods {
			pod := &corev1.Pod{}
			if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, pod); err != nil {
				return false, err
			}
			if pod.Annotations[kruisepolicyv1alpha1.PodRelatedPubAnnotation] != budget ||
				pod.Annotations[kruisepolicyv1alpha1.PodRelatedPubAnnotationLegacy] != budget {
				return false, fmt.Errorf("pod %s annotations %v", name, pod.Annotations)
			}
		}
		return true, nil
	})
}

// waitServed waits until the API server calls the module's check: a dry-run eviction of pod reaches it (and,
// being a dry run, records nothing).
func (e *env) waitServed(t *testing.T, pod string) {
	t.Helper()
	before := managertest.Counter(t, guard.DisruptionsName, map[string]string{"operation": "EVICT", "result": "admitted"})
	managertest.Eventually(t, itTimeout, "the API server calling the pod validating webhook", func(ctx context.Context) (bool, error) {
		if err := e.evict(ctx, pod, true); err != nil {
			return false, err
		}
		after := managertest.Counter(t, guard.DisruptionsName, map[string]string{"operation": "EVICT", "result": "admitted"})
		return after > before, nil
	})
}
