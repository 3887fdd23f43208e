package nodeagent

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

// userMarker is upstream's documented PodProbeMarker as a user writes it, with a field no Go type knows.
const userMarker = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"PodProbeMarker","metadata":{"name":"game-server-probe","namespace":"default"},` +
	`"spec":{"selector":{"matchLabels":{"app":"game-server"}},"futureField":"kept","probes":[{"name":"Idle","containerName":"game-server",` +
	`"probe":{"exec":{"command":["/home/game/idle.sh"]},"initialDelaySeconds":10,"timeoutSeconds":3,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},` +
	`"markerPolicy":[{"state":"Succeeded","labels":{"gameserver-idle":"true"},"annotations":{"controller.kubernetes.io/pod-deletion-cost":"-10"}},` +
	`{"state":"Failed","labels":{"gameserver-idle":"false"},"annotations":{"controller.kubernetes.io/pod-deletion-cost":"10"}}],` +
	`"podConditionType":"game.kruise.io/idle"}]}}`

func markerHandler(t *testing.T, refusal error) admission.Handler {
	t.Helper()
	srv := webhooktest.NewServer()
	if err := RegisterPodProbeMarkerWebhook(srv, crrTestScheme(t), refusal); err != nil {
		t.Fatal(err)
	}
	return srv.Admission(t, ValidatePodProbeMarkerPath)
}

func markerRequest(op admissionv1.Operation, body, old string) admission.Request {
	return webhooktest.Request("PodProbeMarker", "podprobemarkers", "default", "game-server-probe", op, body, old)
}

func TestPodProbeMarkerValidatingWebhook(t *testing.T) {
	h := markerHandler(t, nil)
	if resp := h.Handle(context.Background(), markerRequest(admissionv1.Create, userMarker, "")); !resp.Allowed {
		t.Errorf("upstream's example refused: %v", resp.Result)
	}
	for _, tc := range []struct{ name, body, old, want string }{
		{"a reserved condition type", strings.Replace(userMarker, "game.kruise.io/idle", "Ready", 1), "",
			`spec.probes[0].podConditionType: Invalid value: "Ready"`},
		{"a gRPC probe", strings.Replace(userMarker, `"exec":{"command":["/home/game/idle.sh"]}`, `"grpc":{"port":9000}`, 1), "",
			"spec.probes[0].probe.grpc: Forbidden"},
		{"the selector changed", strings.Replace(userMarker, `"app":"game-server"`, `"app":"other"`, 1), userMarker,
			"spec.selector: Invalid value"},
	} {
		op := admissionv1.Create
		if tc.old != "" {
			op = admissionv1.Update
		}
		resp := h.Handle(context.Background(), markerRequest(op, tc.body, tc.old))
		if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity || !strings.Contains(resp.Result.Message, tc.want) {
			t.Errorf("%s: allowed=%v %v; want 422 naming %q", tc.name, resp.Allowed, resp.Result, tc.want)
		}
	}
}

// With the gate off the webhook refuses every marker, as upstream's; a marker left from before can still
// lose its finalizer.
func TestPodProbeMarkerWebhookRefusesWhileTheGateIsOff(t *testing.T) {
	off := errors.New("feature-gate PodProbeMarkerGate is not enabled")
	h := markerHandler(t, off)
	resp := h.Handle(context.Background(), markerRequest(admissionv1.Create, userMarker, ""))
	if resp.Allowed || resp.Result.Code != http.StatusForbidden || resp.Result.Message != off.Error() {
		t.Errorf("create: allowed=%v %v; want 403 %q", resp.Allowed, resp.Result, off)
	}
	withFinalizer := strings.Replace(userMarker, `"namespace":"default"`, `"namespace":"default","finalizers":["kruise.io/node-pod-probe-cleanup"]`, 1)
	if resp := h.Handle(context.Background(), markerRequest(admissionv1.Update, userMarker, withFinalizer)); !resp.Allowed {
		t.Errorf("removing the finalizer of a marker left from before refused: %v", resp.Result)
	}
	if resp := h.Handle(context.Background(), markerRequest(admissionv1.Update, strings.Replace(userMarker, `"periodSeconds":10`, `"periodSeconds":20`, 1),
		userMarker)); resp.Allowed {
		t.Error("a change of the spec accepted while the gate is off")
	}
}

// The chart's entry: upstream's name and path, creates and updates of PodProbeMarkers, failing closed.
func TestPodProbeMarkerWebhookConfiguration(t *testing.T) {
	webhooktest.CheckKindWebhooks(t, "podprobemarkers", map[string]string{"vpodprobemarker.kb.io": ValidatePodProbeMarkerPath},
		[]string{ValidatePodProbeMarkerPath})
	if err := RegisterPodProbeMarkerWebhook(webhooktest.NewServer(), nil, nil); err == nil {
		t.Error("no error without a scheme")
	}
}
