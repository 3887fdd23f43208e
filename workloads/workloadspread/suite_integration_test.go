package workloadspread

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
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
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// TestMain runs one API server (with Flotilla's CRDs) for the package. No controller manager runs: the tests
// create a ReplicaSet's pods as its controller would.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// runs numbers the runs of the process (go test -count), so that the cluster-scoped names never repeat.
var runs atomic.Int32

// The chart's webhooks the module answers, installed as the chart installs them.
var (
	mutatingWebhooks   = []string{matchconditions.PodWebhook, matchconditions.SidecarWebhook}
	validatingWebhooks = []string{"vworkloadspread.kb.io", "vpod.kb.io", "vpodeviction.kb.io"}
)

type env struct {
	c        client.Client
	ns       string
	mutating string
}

// start runs the module as the manager does (its controller, its parts of both pod chains, its validating
// webhook, the shared pod routing, the certificate manager pointing the chart's webhooks at this process)
// until the test ends, and returns a namespace of the test's.
func start(t *testing.T) *env {
	t.Helper()
	return startAhead(t, 0)
}

// startAhead starts the module with its controller's clock ahead of the real one by ahead.
func startAhead(t *testing.T, ahead time.Duration) *env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme, kruiseappsv1beta1.AddToScheme)
	e := &env{c: managertest.DirectClient(t, clusterConfig, scheme)}
	run := fmt.Sprintf("ws-it-%d-%d", runs.Add(1), time.Now().UnixNano()%100000)
	certs := managertest.Namespace(t, e.c, "ws-certs")
	var validating string
	e.mutating, validating = e.installConfigurations(t, run)
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	var cm *webhooks.CertManager
	managertest.Start(t, clusterConfig, scheme, func(mgr ctrl.Manager) error {
		cm, err = setupLikeTheManager(mgr, certs, e.mutating, validating, clockAhead(ahead))
		return err
	}, func(o *ctrl.Options) {
		o.WebhookServer = webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: ports[0], CertDir: t.TempDir()})
	})
	managertest.Eventually(t, itTimeout, "the webhook certificates", func(context.Context) (bool, error) { return cm.Ready() == nil, cm.Ready() })
	e.ns = managertest.NamespaceWithServiceAccount(t, e.c, "ws")
	return e
}

// clockAhead is the real clock moved ahead by d.
type clockAhead time.Duration

func (d clockAhead) Now() time.Time                  { return time.Now().Add(time.Duration(d)) }
func (d clockAhead) Since(t time.Time) time.Duration { return d.Now().Sub(t) }

func setupLikeTheManager(mgr ctrl.Manager, certs, mutating, validating string, clk clockAhead) (*webhooks.CertManager, error) {
	gate, err := feature.NewGate()
	if err != nil {
		return nil, err
	}
	pods, validations, routes := &webhooks.PodChain{}, &webhooks.PodValidationChain{}, &matchconditions.PodRoutes{}
	opts := module.Options{Features: feature.Resolve(gate), PodMutations: pods, PodValidations: validations, PodRoutes: routes,
		MutatingWebhookConfiguration: mutating}
	if err := setup(mgr, opts, clk); err != nil {
		return nil, err
	}
	if err := routes.SetupWithManager(mgr, mutating); err != nil {
		return nil, err
	}
	if err := webhooks.RegisterPodChain(mgr.GetWebhookServer(), mgr.GetScheme(), pods); err != nil {
		return nil, err
	}
	if err := webhooks.RegisterPodValidationChain(mgr.GetWebhookServer(), mgr.GetScheme(), mgr.GetClient(), validations); err != nil {
		return nil, err
	}
	return webhooks.Register(mgr, webhooks.Options{Namespace: certs, SecretName: "flotilla-webhook-certs", Host: "127.0.0.1",
		MutatingWebhookConfigurationName: mutating, ValidatingWebhookConfigurationName: validating}, conversion.NewRegistry())
}

// installConfigurations creates the chart's webhooks of the module under names of the run's, deleted when
// the test ends (some fail closed, and the manager that answers them stops with the test).
func (e *env) installConfigurations(t *testing.T, run string) (string, string) {
	t.Helper()
	mutating, validating := webhooktest.Configurations(t)
	mutating.Webhooks = slices.DeleteFunc(mutating.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool {
		return !slices.Contains(mutatingWebhooks, w.Name)
	})
	validating.Webhooks = slices.DeleteFunc(validating.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return !slices.Contains(validatingWebhooks, w.Name)
	})
	if len(mutating.Webhooks) != len(mutatingWebhooks) || len(validating.Webhooks) != len(validatingWebhooks) {
		t.Fatalf("the chart lacks some of %v %v", mutatingWebhooks, validatingWebhooks)
	}
	mutating.Name, validating.Name = "flotilla-"+run, "flotilla-"+run
	for _, obj := range []client.Object{mutating, validating} {
		managertest.Create(t, e.c, obj)
		t.Cleanup(func() { _ = e.c.Delete(context.Background(), obj) })
	}
	return mutating.Name, validating.Name
}

func (e *env) eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	managertest.Eventually(t, itTimeout, what, cond)
}

// replicaSet creates a ReplicaSet of replicas; nothing runs it, the tests create its pods.
func (e *env) replicaSet(t *testing.T, name string, replicas int32) *appsv1.ReplicaSet {
	t.Helper()
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:v1"}}}},
	}}
	managertest.Create(t, e.c, rs)
	return rs
}

// pod creates a pod of rs as its controller would (named, or with generateName when name is empty) and
// returns it as admitted.
func (e *env) pod(ctx context.Context, rs *appsv1.ReplicaSet, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: rs.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec: *rs.Spec.Template.Spec.DeepCopy()}
	if name == "" {
		pod.GenerateName = rs.Name + "-"
	}
	return pod, e.c.Create(ctx, pod)
}

// markReady reports the pod running and Ready, as a kubelet would.
func (e *env) markReady(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	ready := client.RawPatch(types.MergePatchType, []byte(`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`))
	if err := e.c.Status().Patch(t.Context(), pod, ready); err != nil {
		t.Fatal(err)
	}
}

// spread creates a WorkloadSpread over rs with the given subsets (zones, nil maxReplicas: unlimited).
func (e *env) spread(t *testing.T, rs *appsv1.ReplicaSet, zones []string, max []*intstr.IntOrString) *kruiseappsv1alpha1.WorkloadSpread {
	t.Helper()
	ws := &kruiseappsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: rs.Name, Namespace: e.ns},
		Spec: kruiseappsv1alpha1.WorkloadSpreadSpec{TargetReference: &kruiseappsv1alpha1.TargetReference{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name}}}
	for i, zone := range zones {
		ws.Spec.Subsets = append(ws.Spec.Subsets, kruiseappsv1alpha1.WorkloadSpreadSubset{Name: zone, MaxReplicas: max[i],
			RequiredNodeSelectorTerm: &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: zoneKey, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}})
	}
	managertest.Create(t, e.c, ws)
	e.waitReconciled(t, ws)
	e.waitRouted(t)
	return ws
}

const zoneKey = "topology.kubernetes.io/zone"

// waitReconciled waits until the controller reported the WorkloadSpread's generation.
func (e *env) waitReconciled(t *testing.T, ws *kruiseappsv1alpha1.WorkloadSpread) {
	t.Helper()
	e.eventually(t, "the WorkloadSpread reconciled", func(ctx context.Context) (bool, error) {
		got := &kruiseappsv1alpha1.WorkloadSpread{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(ws), got); err != nil {
			return false, err
		}
		return got.Status.ObservedGeneration == got.Generation && len(got.Status.SubsetStatuses) == len(got.Spec.Subsets),
			fmt.Errorf("status %+v", got.Status)
	})
}

// waitRouted waits until mpod.kb.io takes the pods of spread workloads.
func (e *env) waitRouted(t *testing.T) {
	t.Helper()
	want, _ := matchconditions.Expressions([]string{SpreadablePods})
	e.eventually(t, "ReplicaSet pods routed to the pod webhook", func(ctx context.Context) (bool, error) {
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := e.c.Get(ctx, client.ObjectKey{Name: e.mutating}, cfg); err != nil {
			return false, err
		}
		for _, w := range cfg.Webhooks {
			if w.Name == matchconditions.PodWebhook {
				return matchconditions.Same(w.MatchConditions[0].Expression, want), fmt.Errorf("condition %s", w.MatchConditions[0].Expression)
			}
		}
		return false, fmt.Errorf("no %s", matchconditions.PodWebhook)
	})
}
