package trafficrouting_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

var demo = rolloutsv1beta1.ProgressingRolloutFinalizer("demo")

// routed is the VirtualService at weight 20: canary and stable share the Service "web", so the canary share
// goes to its "canary" subset.
const routed = "web:80,web/canary:20"

func TestLifecycle(t *testing.T) {
	f := newFixture(t)
	original := f.snapshot(t)
	f.create(t, "web")

	tr := f.waitHealthy(t)
	if !controllerutil.ContainsFinalizer(tr, rolloutsv1beta1.TrafficRoutingFinalizer) {
		t.Errorf("finalizers %v lack %s", tr.Finalizers, rolloutsv1beta1.TrafficRoutingFinalizer)
	}
	if got := f.snapshot(t); got != original {
		t.Errorf("a Healthy TrafficRouting changed the VirtualService:\n%s", got)
	}

	// A Rollout opts in: its progressing finalizer makes the strategy route.
	f.update(t, func(tr *rolloutsv1alpha1.TrafficRouting) { controllerutil.AddFinalizer(tr, demo) })
	f.waitRouted(t, "weight 20%", routed)

	// A change of the strategy while progressing is routed too.
	exact := gatewayv1.HeaderMatchExact
	f.update(t, func(tr *rolloutsv1alpha1.TrafficRouting) {
		tr.Spec.Strategy.Matches = []rolloutsv1alpha1.HttpRouteMatch{{Headers: []gatewayv1.HTTPHeaderMatch{{Type: &exact, Name: "user-agent", Value: "pc"}}}}
		tr.Spec.Strategy.RequestHeaderModifier = &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x-canary", Value: "1"}}}
	})
	f.waitRouted(t, "weight 20%, match header user-agent=pc", `[{"headers":{"user-agent":{"exact":"pc"}}}] -> {"request":{"set":{"x-canary":"1"}}} web/canary`+"\nweb")

	// The Rollout is done: Finalizing restores the VirtualService exactly, then Healthy.
	f.update(t, func(tr *rolloutsv1alpha1.TrafficRouting) { controllerutil.RemoveFinalizer(tr, demo) })
	f.waitHealthy(t)
	if got := f.snapshot(t); got != original {
		t.Errorf("VirtualService not restored:\n got %s\nwant %s", got, original)
	}
	f.waitEvent(t, corev1.EventTypeNormal, "Finalizing", "Progressing -> Finalizing")
	f.waitEvent(t, corev1.EventTypeNormal, "Healthy", "Finalizing -> Healthy")

	if err := f.c.Delete(t.Context(), f.get(t)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "TrafficRouting gone", func() (bool, string) { return f.get(t) == nil, "" })
	if got := f.snapshot(t); got != original {
		t.Errorf("VirtualService changed by the deletion:\n%s", got)
	}
}

// waitRouted waits until the TrafficRouting reports the routes in place for its generation and checks the
// VirtualService routes as expected.
func (f fixture) waitRouted(t *testing.T, routes, want string) {
	t.Helper()
	eventually(t, "routed "+routes, func() (bool, string) {
		tr := f.get(t)
		return tr.Status.Phase == rolloutsv1alpha1.TrafficRoutingPhaseProgressing && tr.Status.ObservedGeneration == tr.Generation &&
			tr.Status.Message == "Routing "+routes, describe(tr)
	})
	if got := f.routes(t); got != want {
		t.Errorf("VirtualService routes:\n%s\nwant:\n%s", got, want)
	}
	saved := f.virtualService(t).GetAnnotations()[rolloutsv1beta1.OriginalSpecConfigurationAnnotation]
	if saved == "" {
		t.Error("the original configuration is not saved on the VirtualService")
	}
}

// A TrafficRouting deleted while a Rollout still drives it restores the routes and drops its own finalizer at
// once; the Rollout's finalizer keeps it until the Rollout lets go.
func TestDeleteWhileProgressing(t *testing.T) {
	f := newFixture(t)
	original := f.snapshot(t)
	f.create(t, "web")
	f.waitHealthy(t)
	f.update(t, func(tr *rolloutsv1alpha1.TrafficRouting) { controllerutil.AddFinalizer(tr, demo) })
	f.waitRouted(t, "weight 20%", routed)

	if err := f.c.Delete(t.Context(), f.get(t)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "own finalizer removed", func() (bool, string) {
		tr := f.get(t)
		return tr != nil && !controllerutil.ContainsFinalizer(tr, rolloutsv1beta1.TrafficRoutingFinalizer), describe(tr)
	})
	tr := f.get(t)
	if tr.Status.Phase != rolloutsv1alpha1.TrafficRoutingPhaseTerminating {
		t.Errorf("phase %s, want Terminating", tr.Status.Phase)
	}
	if got := f.snapshot(t); got != original {
		t.Errorf("VirtualService not restored:\n got %s\nwant %s", got, original)
	}
	f.update(t, func(tr *rolloutsv1alpha1.TrafficRouting) { controllerutil.RemoveFinalizer(tr, demo) })
	eventually(t, "TrafficRouting gone", func() (bool, string) { return f.get(t) == nil, "" })
}

// A missing object keeps the TrafficRouting Initial with a message and a Warning event naming it; once the
// object exists it becomes Healthy.
func TestMissingObject(t *testing.T) {
	f := newFixture(t)
	f.create(t, "missing")
	name := "VirtualService " + f.ns + "/missing"
	eventually(t, "message names the object", func() (bool, string) {
		tr := f.get(t)
		return strings.Contains(tr.Status.Message, name), describe(tr)
	})
	f.waitEvent(t, corev1.EventTypeWarning, "TrafficRoutingFailed", name)
	time.Sleep(2 * time.Second)
	if tr := f.get(t); tr.Status.Phase != rolloutsv1alpha1.TrafficRoutingPhaseInitial {
		t.Errorf("phase %s, want Initial: %s", tr.Status.Phase, describe(tr))
	}

	// Deleting it meanwhile is not blocked by the missing object.
	if err := f.c.Delete(t.Context(), f.get(t)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "TrafficRouting gone", func() (bool, string) { return f.get(t) == nil, "" })
}

// Gateway API objectRefs are refused with a message that says why.
func TestGatewayRejected(t *testing.T) {
	f := newFixture(t)
	tr := f.create(t, "web")
	f.waitHealthy(t)
	f.update(t, func(tr *rolloutsv1alpha1.TrafficRouting) {
		tr.Spec.ObjectRef[0].Gateway = &rolloutsv1alpha1.GatewayTrafficRouting{HTTPRouteName: ptr.To("web")}
		controllerutil.AddFinalizer(tr, demo)
	})
	eventually(t, "gateway refused", func() (bool, string) {
		tr = f.get(t)
		return strings.Contains(tr.Status.Message, "objectRef[0].gateway"), describe(tr)
	})
	f.waitEvent(t, corev1.EventTypeWarning, "InvalidSpec", "no canary Service")
}
