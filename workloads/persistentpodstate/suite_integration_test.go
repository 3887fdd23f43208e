package persistentpodstate

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
	"github.com/flotilla-dev/flotilla/webhooks/matchconditions"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/persistentpodstate/internal/podrouting"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// TestMain runs one API server (with Flotilla's CRDs) for the package. Nothing runs StatefulSets: the tests
// create their pods as a StatefulSet controller would, and mark them Ready as a kubelet would.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// runs numbers the runs of the process (go test -count), so that the cluster-scoped names never repeat.
var runs atomic.Int32

type env struct {
	c        client.Client
	run      string
	mutating string // the mutating webhook configuration's name
}

// start runs a manager with the module and its webhooks, which the API server calls through the chart's
// entries (the pod chain's mpod.kb.io and vpersistentpodstate.kb.io) under configurations of the run's.
func start(t *testing.T) *env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme, kruiseappsv1beta1.AddToScheme)
	e := &env{c: managertest.DirectClient(t, clusterConfig, scheme), run: fmt.Sprintf("r%d-%d", runs.Add(1), time.Now().UnixNano()%100000)}
	e.mutating = "flotilla-it-pps-" + e.run
	certs := managertest.Namespace(t, e.c, "pps-certs")
	mutating, validating := e.installConfigurations(t)
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	gate, err := feature.NewGate()
	if err != nil {
		t.Fatal(err)
	}
	managertest.Start(t, clusterConfig, scheme, func(mgr ctrl.Manager) error {
		pods, routes := &webhooks.PodChain{}, &matchconditions.PodRoutes{}
		if err := SetupWithManager(t.Context(), mgr, module.Options{Features: feature.Resolve(gate), PodMutations: pods,
			PodRoutes: routes, MutatingWebhookConfiguration: mutating}); err != nil {
			return err
		}
		if err := routes.SetupWithManager(mgr, mutating); err != nil {
			return err
		}
		if err := webhooks.RegisterPodChain(mgr.GetWebhookServer(), mgr.GetScheme(), pods); err != nil {
			return err
		}
		_, err := webhooks.Register(mgr, webhooks.Options{Namespace: certs, SecretName: "flotilla-webhook-certs", Host: "127.0.0.1",
			MutatingWebhookConfigurationName: mutating, ValidatingWebhookConfigurationName: validating}, conversion.NewRegistry())
		return err
	}, func(o *ctrl.Options) {
		o.WebhookServer = webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: ports[0], CertDir: t.TempDir()})
	})
	return e
}

// installConfigurations creates the chart's pod webhooks (mpod.kb.io, msidecarset-pod.kb.io) and
// vpersistentpodstate.kb.io under names of the run's.
func (e *env) installConfigurations(t *testing.T) (string, string) {
	t.Helper()
	mutating, validating := webhooktest.Configurations(t)
	mutating.Webhooks = slices.DeleteFunc(mutating.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool {
		return w.Name != matchconditions.PodWebhook && w.Name != matchconditions.SidecarWebhook
	})
	validating.Webhooks = slices.DeleteFunc(validating.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return w.Name != "vpersistentpodstate.kb.io"
	})
	mutating.Name, validating.Name = e.mutating, "flotilla-it-pps-"+e.run
	for _, obj := range []client.Object{mutating, validating} {
		managertest.Create(t, e.c, obj)
		t.Cleanup(func() { _ = e.c.Delete(context.Background(), obj) })
	}
	return mutating.Name, validating.Name
}

// node creates a node of the run's in zone; it goes when the test ends.
func (e *env) node(t *testing.T, name, zone string) string {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.run + "-" + name, Labels: map[string]string{zoneKey: zone}}}
	managertest.Create(t, e.c, node)
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), node) })
	return node.Name
}

func (e *env) eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	managertest.Eventually(t, itTimeout, what, cond)
}

// markReady reports the pod running and Ready on its node, as a kubelet would.
func (e *env) markReady(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if err := e.c.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

// waitRouting waits until the pod webhooks' conditions take StatefulSet pods (on) or leave them (off).
func (e *env) waitRouting(t *testing.T, on bool) {
	t.Helper()
	var taken []string
	if on {
		taken = []string{podrouting.StatefulSetPods}
	}
	pod, sidecar := matchconditions.Expressions(taken)
	e.eventually(t, fmt.Sprintf("StatefulSet pods routed to the pod webhook: %v", on), func(ctx context.Context) (bool, error) {
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := e.c.Get(ctx, client.ObjectKey{Name: e.mutating}, cfg); err != nil {
			return false, err
		}
		got := map[string]string{}
		for _, w := range cfg.Webhooks {
			got[w.Name] = w.MatchConditions[0].Expression
		}
		return matchconditions.Same(got[matchconditions.PodWebhook], pod) && matchconditions.Same(got[matchconditions.SidecarWebhook], sidecar),
			fmt.Errorf("conditions %v", got)
	})
}
