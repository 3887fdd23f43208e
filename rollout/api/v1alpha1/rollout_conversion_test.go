package v1alpha1

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func ptrTo[T any](v T) *T { return &v }

func intOrStr(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

func toHub(t *testing.T, in *Rollout) *rolloutsv1beta1.Rollout {
	t.Helper()
	out := &rolloutsv1beta1.Rollout{}
	if err := ConvertRolloutToV1beta1(in, out); err != nil {
		t.Fatalf("ConvertRolloutToV1beta1: %v", err)
	}
	return out
}

func toSpoke(t *testing.T, in *rolloutsv1beta1.Rollout) *Rollout {
	t.Helper()
	out := &Rollout{}
	if err := ConvertRolloutFromV1beta1(in, out); err != nil {
		t.Fatalf("ConvertRolloutFromV1beta1: %v", err)
	}
	return out
}

func savedHubData(t *testing.T, r *Rollout) rolloutHubData {
	t.Helper()
	var data rolloutHubData
	if raw, ok := r.Annotations[ConversionDataAnnotation]; ok {
		if err := json.Unmarshal([]byte(raw), &data); err != nil {
			t.Fatalf("conversion data: %v", err)
		}
	}
	return data
}

func spokeWithCanary(annotations map[string]string, canary *CanaryStrategy) *Rollout {
	return &Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo", Annotations: annotations},
		Spec: RolloutSpec{
			ObjectRef: ObjectRef{WorkloadRef: &WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
			Strategy:  RolloutStrategy{Canary: canary},
		},
	}
}

var hubRolloutType = metav1.TypeMeta{APIVersion: "rollouts.kruise.io/v1beta1", Kind: "Rollout"}

func hubWithCanary(annotations map[string]string, canary *rolloutsv1beta1.CanaryStrategy) *rolloutsv1beta1.Rollout {
	return &rolloutsv1beta1.Rollout{
		TypeMeta:   hubRolloutType,
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo", Annotations: annotations},
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Strategy:    rolloutsv1beta1.RolloutStrategy{Canary: canary},
		},
	}
}

func TestConvertRolloutToV1beta1WorkloadRef(t *testing.T) {
	in := spokeWithCanary(nil, nil)
	in.Spec.Disabled = true
	in.Spec.Strategy.Paused = true
	got := toHub(t, in)
	want := rolloutsv1beta1.RolloutSpec{
		WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		Strategy:    rolloutsv1beta1.RolloutStrategy{Paused: true},
		Disabled:    true,
	}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if got.APIVersion != "rollouts.kruise.io/v1beta1" || got.Kind != "Rollout" {
		t.Errorf("type meta = %v", got.TypeMeta)
	}
	if _, ok := got.Annotations[RolloutStyleAnnotation]; ok {
		t.Errorf("rolling-style annotation written for a Rollout without canary strategy")
	}

	in.Spec.ObjectRef.WorkloadRef = nil
	if got := toHub(t, in); got.Spec.WorkloadRef != (rolloutsv1beta1.ObjectRef{}) {
		t.Errorf("nil workloadRef converted to %+v, want empty", got.Spec.WorkloadRef)
	}
}

func TestConvertRolloutToV1beta1Steps(t *testing.T) {
	in := spokeWithCanary(nil, &CanaryStrategy{Steps: []CanaryStep{
		{TrafficRoutingStrategy: TrafficRoutingStrategy{Weight: ptrTo[int32](20)}, Pause: RolloutPause{}},
		{TrafficRoutingStrategy: TrafficRoutingStrategy{Weight: ptrTo[int32](50)}, Replicas: intOrStr("3"), Pause: RolloutPause{Duration: ptrTo[int32](60)}},
		{Replicas: intOrStr("100%")},
	}})
	want := []rolloutsv1beta1.CanaryStep{
		{TrafficRoutingStrategy: rolloutsv1beta1.TrafficRoutingStrategy{Traffic: ptrTo("20%")}, Replicas: intOrStr("20%")},
		{TrafficRoutingStrategy: rolloutsv1beta1.TrafficRoutingStrategy{Traffic: ptrTo("50%")}, Replicas: intOrStr("3"), Pause: rolloutsv1beta1.RolloutPause{Duration: ptrTo[int32](60)}},
		{Replicas: intOrStr("100%")},
	}
	got := toHub(t, in)
	if diff := cmp.Diff(want, got.Spec.Strategy.Canary.Steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

func TestConvertRolloutToV1beta1RollingStyle(t *testing.T) {
	tests := []struct {
		name           string
		annotations    map[string]string
		wantExtra      bool
		wantAnnotation string
	}{
		{name: "no annotation defaults to canary", wantExtra: true, wantAnnotation: "canary"},
		{name: "canary", annotations: map[string]string{RolloutStyleAnnotation: "canary"}, wantExtra: true, wantAnnotation: "canary"},
		{name: "partition", annotations: map[string]string{RolloutStyleAnnotation: "partition"}, wantAnnotation: "partition"},
		{name: "Partition", annotations: map[string]string{RolloutStyleAnnotation: "Partition"}, wantAnnotation: "partition"},
		{name: "PARTITION", annotations: map[string]string{RolloutStyleAnnotation: "PARTITION"}, wantAnnotation: "partition"},
		{name: "unknown value is canary", annotations: map[string]string{RolloutStyleAnnotation: "bluegreen"}, wantExtra: true, wantAnnotation: "canary"},
		{name: "empty value is canary", annotations: map[string]string{RolloutStyleAnnotation: ""}, wantExtra: true, wantAnnotation: "canary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toHub(t, spokeWithCanary(tt.annotations, &CanaryStrategy{}))
			if got.Spec.Strategy.Canary.EnableExtraWorkloadForCanary != tt.wantExtra {
				t.Errorf("enableExtraWorkloadForCanary = %v, want %v", got.Spec.Strategy.Canary.EnableExtraWorkloadForCanary, tt.wantExtra)
			}
			if got.Annotations[RolloutStyleAnnotation] != tt.wantAnnotation {
				t.Errorf("annotation = %q, want %q", got.Annotations[RolloutStyleAnnotation], tt.wantAnnotation)
			}
			if style := got.Spec.Strategy.GetRollingStyle(); (style == rolloutsv1beta1.CanaryRollingStyle) != tt.wantExtra {
				t.Errorf("rolling style = %s", style)
			}
		})
	}
}

func TestConvertRolloutToV1beta1TrafficRoutingAnnotation(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{name: "annotation names the TrafficRouting", annotations: map[string]string{TrafficRoutingAnnotation: "tr-1"}, want: "tr-1"},
		{name: "empty annotation", annotations: map[string]string{TrafficRoutingAnnotation: ""}},
		{name: "no annotation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toHub(t, spokeWithCanary(tt.annotations, &CanaryStrategy{}))
			if got.Spec.Strategy.Canary.TrafficRoutingRef != tt.want {
				t.Errorf("trafficRoutingRef = %q, want %q", got.Spec.Strategy.Canary.TrafficRoutingRef, tt.want)
			}
			if value, ok := tt.annotations[TrafficRoutingAnnotation]; ok && got.Annotations[TrafficRoutingAnnotation] != value {
				t.Errorf("annotation not kept: %q", got.Annotations[TrafficRoutingAnnotation])
			}
		})
	}
}

func TestConvertRolloutToV1beta1CanaryFields(t *testing.T) {
	exact := gatewayv1.HeaderMatchExact
	headers := []gatewayv1.HTTPHeaderMatch{{Type: &exact, Name: "user-agent", Value: "Android"}}
	modifier := &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x-env", Value: "canary"}}}
	in := spokeWithCanary(nil, &CanaryStrategy{
		Steps: []CanaryStep{{TrafficRoutingStrategy: TrafficRoutingStrategy{
			RequestHeaderModifier: modifier, Matches: []HttpRouteMatch{{Headers: headers}},
		}}},
		TrafficRoutings: []TrafficRoutingRef{{
			Service: "web", GracePeriodSeconds: 5,
			Ingress:           &IngressTrafficRouting{ClassType: "nginx", Name: "web"},
			Gateway:           &GatewayTrafficRouting{HTTPRouteName: ptrTo("web-route")},
			CustomNetworkRefs: []CustomNetworkRef{{APIVersion: "networking.istio.io/v1alpha3", Kind: "VirtualService", Name: "web"}},
		}},
		FailureThreshold:             intOrStr("20%"),
		PatchPodTemplateMetadata:     &PatchPodTemplateMetadata{Labels: map[string]string{"istio.service.tag": "gray"}},
		DisableGenerateCanaryService: true,
	})
	want := &rolloutsv1beta1.CanaryStrategy{
		Steps: []rolloutsv1beta1.CanaryStep{{TrafficRoutingStrategy: rolloutsv1beta1.TrafficRoutingStrategy{
			RequestHeaderModifier: modifier, Matches: []rolloutsv1beta1.HttpRouteMatch{{Headers: headers}},
		}}},
		TrafficRoutings: []rolloutsv1beta1.TrafficRoutingRef{{
			Service: "web", GracePeriodSeconds: 5,
			Ingress:           &rolloutsv1beta1.IngressTrafficRouting{ClassType: "nginx", Name: "web"},
			Gateway:           &rolloutsv1beta1.GatewayTrafficRouting{HTTPRouteName: ptrTo("web-route")},
			CustomNetworkRefs: []rolloutsv1beta1.ObjectRef{{APIVersion: "networking.istio.io/v1alpha3", Kind: "VirtualService", Name: "web"}},
		}},
		FailureThreshold:             intOrStr("20%"),
		PatchPodTemplateMetadata:     &rolloutsv1beta1.PatchPodTemplateMetadata{Labels: map[string]string{"istio.service.tag": "gray"}},
		EnableExtraWorkloadForCanary: true,
		DisableGenerateCanaryService: true,
	}
	got := toHub(t, in)
	if diff := cmp.Diff(want, got.Spec.Strategy.Canary); diff != "" {
		t.Errorf("canary (-want +got):\n%s", diff)
	}
	got.Spec.Strategy.Canary.TrafficRoutings[0].Ingress.Name = "changed"
	if in.Spec.Strategy.Canary.TrafficRoutings[0].Ingress.Name != "web" {
		t.Errorf("conversion shares memory with its source")
	}
}

func TestConvertRolloutToV1beta1Status(t *testing.T) {
	now := metav1.Unix(1700000000, 0)
	in := spokeWithCanary(nil, nil)
	in.Status = RolloutStatus{
		ObservedGeneration: 3, Phase: RolloutPhaseProgressing, Message: "Rollout is in step(2/3)",
		Conditions: []RolloutCondition{{Type: RolloutConditionProgressing, Status: corev1.ConditionTrue, Reason: "InRolling", Message: "m", LastUpdateTime: now, LastTransitionTime: now}},
		CanaryStatus: &CanaryStatus{
			ObservedWorkloadGeneration: 7, ObservedRolloutID: "r1", RolloutHash: "h", StableRevision: "s",
			CanaryRevision: "c", PodTemplateHash: "p", CanaryReplicas: 2, CanaryReadyReplicas: 1,
			NextStepIndex: 3, CurrentStepIndex: 2, CurrentStepState: CanaryStepStatePaused,
			Message: "waiting", LastUpdateTime: &now, FinalisingStep: "RestoreStableService",
		},
	}
	want := rolloutsv1beta1.RolloutStatus{
		ObservedGeneration: 3, Phase: rolloutsv1beta1.RolloutPhaseProgressing, Message: "Rollout is in step(2/3)",
		Conditions: []rolloutsv1beta1.RolloutCondition{{Type: rolloutsv1beta1.RolloutConditionProgressing, Status: corev1.ConditionTrue, Reason: "InRolling", Message: "m", LastUpdateTime: now, LastTransitionTime: now}},
		CanaryStatus: &rolloutsv1beta1.CanaryStatus{
			CommonStatus: rolloutsv1beta1.CommonStatus{
				ObservedWorkloadGeneration: 7, ObservedRolloutID: "r1", RolloutHash: "h", StableRevision: "s",
				PodTemplateHash: "p", CurrentStepIndex: 2, NextStepIndex: 3,
				FinalisingStep: rolloutsv1beta1.FinalisingStepRestoreStableService, CurrentStepState: rolloutsv1beta1.CanaryStepStatePaused,
				Message: "waiting", LastUpdateTime: &now,
			},
			CanaryRevision: "c", CanaryReplicas: 2, CanaryReadyReplicas: 1,
		},
		CurrentStepIndex: 2,
		CurrentStepState: rolloutsv1beta1.CanaryStepStatePaused,
	}
	if diff := cmp.Diff(want, toHub(t, in).Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	in.Status = RolloutStatus{Phase: RolloutPhaseHealthy}
	got := toHub(t, in).Status
	if got.CanaryStatus != nil || got.CurrentStepIndex != 0 || got.CurrentStepState != "" {
		t.Errorf("status without canaryStatus = %+v", got)
	}
}

func TestConvertRolloutToV1beta1SavesRolloutID(t *testing.T) {
	in := spokeWithCanary(map[string]string{"team": "a"}, nil)
	in.Spec.DeprecatedRolloutID = "release-7"
	got := toHub(t, in)
	if got.Annotations[ConversionDataAnnotation] != `{"rolloutID":"release-7"}` {
		t.Fatalf("conversion data = %q", got.Annotations[ConversionDataAnnotation])
	}
	if back := toSpoke(t, got); back.Spec.DeprecatedRolloutID != "release-7" || back.Annotations[ConversionDataAnnotation] != "" {
		t.Errorf("rolloutID = %q, annotations %v", back.Spec.DeprecatedRolloutID, back.Annotations)
	}

	in.Spec.DeprecatedRolloutID = ""
	if _, ok := toHub(t, in).Annotations[ConversionDataAnnotation]; ok {
		t.Errorf("conversion data written without spoke-only data")
	}
}

func TestConvertRolloutIgnoresUnreadableConversionData(t *testing.T) {
	in := spokeWithCanary(map[string]string{ConversionDataAnnotation: "{not json"}, &CanaryStrategy{})
	got := toHub(t, in)
	if _, ok := got.Annotations[ConversionDataAnnotation]; ok {
		t.Errorf("unreadable conversion data kept on the hub")
	}
	if got.Spec.Strategy.Canary == nil || !got.Spec.Strategy.Canary.EnableExtraWorkloadForCanary {
		t.Errorf("spec not converted: %+v", got.Spec.Strategy)
	}
	hub := hubWithCanary(map[string]string{ConversionDataAnnotation: "[]"}, nil)
	if spoke := toSpoke(t, hub); spoke.Spec.DeprecatedRolloutID != "" {
		t.Errorf("rolloutID from unreadable data: %q", spoke.Spec.DeprecatedRolloutID)
	}
}

func TestConvertRolloutNilObjects(t *testing.T) {
	if err := ConvertRolloutToV1beta1(nil, &rolloutsv1beta1.Rollout{}); err == nil {
		t.Errorf("nil source accepted")
	}
	if err := ConvertRolloutFromV1beta1(&rolloutsv1beta1.Rollout{}, nil); err == nil {
		t.Errorf("nil destination accepted")
	}
}

func TestConvertRolloutEmptyStrategies(t *testing.T) {
	hub := &rolloutsv1beta1.Rollout{TypeMeta: hubRolloutType, ObjectMeta: metav1.ObjectMeta{Name: "empty"}}
	spoke := toSpoke(t, hub)
	if spoke.Spec.Strategy.Canary != nil || len(spoke.Annotations) != 0 {
		t.Errorf("empty strategy converted to %+v with annotations %v", spoke.Spec.Strategy, spoke.Annotations)
	}
	requireSameJSON(t, hub, toHub(t, spoke))
}

// seedCanaryRollout is the tutorial's v1alpha1 canary Rollout with ingress traffic.
const seedCanaryRollout = `
apiVersion: rollouts.kruise.io/v1alpha1
kind: Rollout
metadata:
  name: rollouts-canary
  annotations:
    rollouts.kruise.io/rolling-style: canary
spec:
  objectRef:
    workloadRef:
      apiVersion: apps/v1
      kind: Deployment
      name: echoserver
  strategy:
    canary:
      steps:
      - weight: 5
        replicas: 1
      - weight: 40
        pause:
          duration: 30
      - weight: 100
        pause:
          duration: 30
      trafficRoutings:
      - service: echoserver
        ingress:
          classType: nginx
          name: echoserver
`

func TestConvertSeedCanaryExample(t *testing.T) {
	var in Rollout
	if err := yaml.UnmarshalStrict([]byte(seedCanaryRollout), &in); err != nil {
		t.Fatalf("decoding the example: %v", err)
	}
	got := toHub(t, &in)
	canary := got.Spec.Strategy.Canary
	if got.Spec.WorkloadRef.Name != "echoserver" || !canary.EnableExtraWorkloadForCanary {
		t.Fatalf("workloadRef %+v, extra workload %v", got.Spec.WorkloadRef, canary.EnableExtraWorkloadForCanary)
	}
	want := []struct{ traffic, replicas string }{{"5%", "1"}, {"40%", "40%"}, {"100%", "100%"}}
	for i, step := range canary.Steps {
		if *step.Traffic != want[i].traffic || step.Replicas.String() != want[i].replicas {
			t.Errorf("step %d: traffic %s replicas %s, want %+v", i+1, *step.Traffic, step.Replicas.String(), want[i])
		}
	}
	if route := canary.TrafficRoutings[0]; route.Service != "echoserver" || route.Ingress.ClassType != "nginx" {
		t.Errorf("traffic routing = %+v", route)
	}
	spokeRolloutRoundTrip(t, &in)
}
