package rollout_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/rollout"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/trafficrouting"
	"github.com/flotilla-dev/flotilla/trafficrouting/ingress"
	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
)

// A routed release's first batch starts in the reconcile that prepares its Services: both Service writes
// succeeded, so the network is as the step wants it and, with no grace period, nothing is left to wait for.
// Each reconcile of a thousand releasing at once waits its turn in a deep queue.
func TestRoutedReleaseStartsWithItsServices(t *testing.T) {
	managertest.RequireCluster(t, cfg)
	c := managertest.DirectClient(t, cfg, newScheme(t))
	ns := namespace(t, c)
	ctx := context.Background()
	for _, obj := range []client.Object{deployment(ns), stableService(ns), stableIngress(ns)} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "kube-controller-manager rolls out the Deployment", func() (bool, string) {
		d := getDeploymentObj(t, c, ns)
		return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == 4, fmt.Sprintf("%+v", d.Status)
	})
	createUnstructured(t, c, routedRollout(ns))
	freezeDeployment(t, c, ns)

	r := routedReconciler(t, c)
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "web"}}
	for range 10 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-canary"}, &corev1.Service{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// This reconcile made the canary Service: it also started the first batch.
		if err := c.Get(ctx, req.NamespacedName, &rolloutsv1beta1.BatchRelease{}); err != nil {
			t.Fatalf("the reconcile that prepared the Services did not start the batch: %v", err)
		}
		return
	}
	t.Fatalf("no canary Service after 10 reconciles: %s", describe(getRollout(t, c, ns)))
}

func routedReconciler(t *testing.T, c client.Client) *rollout.Reconciler {
	t.Helper()
	controls := control.NewRegistry()
	if err := control.RegisterNative(controls, true); err != nil {
		t.Fatal(err)
	}
	providers := trafficrouting.NewRegistry()
	providers.Register("ingress", ingress.Factory(c, luavm.New(luavm.Options{}), trafficrouting.ConfigMapScripts{Reader: c, Namespace: "flotilla-system"}))
	return &rollout.Reconciler{Client: c, Controls: controls, Clock: clock.RealClock{}, Recorder: events.NewFakeRecorder(100),
		Traffic: providers}
}

// routedRollout releases the Deployment in two steps, the first sending 20% of the traffic through the nginx
// Ingress, with no grace period (written out: the CRD defaults an absent one to 3 seconds).
func routedRollout(ns string) *unstructured.Unstructured {
	ro := canaryRollout(ns, "50%", "100%")
	ro.Spec.WorkloadRef.Kind = "Deployment"
	ro.Spec.Strategy.Canary.Steps[0].Traffic = ptr.To("20%")
	ro.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{{Service: "web",
		Ingress: &rolloutsv1beta1.IngressTrafficRouting{Name: "web"}}}
	ro.SetGroupVersionKind(rolloutsv1beta1.GroupVersion.WithKind("Rollout"))
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ro)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	routings, _, _ := unstructured.NestedSlice(obj, "spec", "strategy", "canary", "trafficRoutings")
	routings[0].(map[string]any)["gracePeriodSeconds"] = int64(0)
	_ = unstructured.SetNestedSlice(u.Object, routings, "spec", "strategy", "canary", "trafficRoutings")
	return u
}

func createUnstructured(t *testing.T, c client.Client, u *unstructured.Unstructured) {
	t.Helper()
	if err := c.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}

func stableService(ns string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
}

func stableIngress(ns string) *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: networkingv1.IngressSpec{
		IngressClassName: ptr.To("nginx"),
		Rules: []networkingv1.IngressRule{{Host: "web.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
					Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}},
	}}
}
