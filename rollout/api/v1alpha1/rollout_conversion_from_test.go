package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestConvertRolloutFromV1beta1Traffic(t *testing.T) {
	tests := []struct {
		traffic    *string
		wantWeight *int32
		wantSaved  bool
	}{
		{traffic: nil},
		{traffic: ptrTo("5%"), wantWeight: ptrTo[int32](5)},
		{traffic: ptrTo("100%"), wantWeight: ptrTo[int32](100)},
		{traffic: ptrTo("-3%"), wantWeight: ptrTo[int32](-3)},
		{traffic: ptrTo("05%"), wantWeight: ptrTo[int32](5), wantSaved: true},
		{traffic: ptrTo("+4%"), wantWeight: ptrTo[int32](4), wantSaved: true},
		{traffic: ptrTo("abc"), wantSaved: true},
		{traffic: ptrTo(""), wantSaved: true},
		{traffic: ptrTo("7"), wantSaved: true},
		{traffic: ptrTo("5.5%"), wantSaved: true},
		{traffic: ptrTo("99999999999%"), wantSaved: true},
	}
	for _, tt := range tests {
		name := "nil"
		if tt.traffic != nil {
			name = "traffic " + *tt.traffic
		}
		t.Run(name, func(t *testing.T) {
			in := hubWithCanary(nil, &rolloutsv1beta1.CanaryStrategy{Steps: []rolloutsv1beta1.CanaryStep{
				{TrafficRoutingStrategy: rolloutsv1beta1.TrafficRoutingStrategy{Traffic: tt.traffic}, Replicas: intOrStr("1")},
			}})
			got := toSpoke(t, in)
			if weight := got.Spec.Strategy.Canary.Steps[0].Weight; !equalInt32(weight, tt.wantWeight) {
				t.Errorf("weight = %v, want %v", weight, tt.wantWeight)
			}
			saved := savedHubData(t, got)
			if gotSaved := saved.Steps != nil && saved.Steps[0].Traffic != nil; gotSaved != tt.wantSaved {
				t.Errorf("traffic saved = %v, want %v", gotSaved, tt.wantSaved)
			}
			if back := toHub(t, got); !equalString(back.Spec.Strategy.Canary.Steps[0].Traffic, tt.traffic) {
				t.Errorf("traffic after round trip = %v, want %v", back.Spec.Strategy.Canary.Steps[0].Traffic, tt.traffic)
			}
		})
	}
}

func equalString(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func TestConvertRolloutFromV1beta1Annotations(t *testing.T) {
	tests := []struct {
		name            string
		annotations     map[string]string
		canary          rolloutsv1beta1.CanaryStrategy
		wantAnnotations map[string]string
	}{
		{
			name:            "canary style",
			canary:          rolloutsv1beta1.CanaryStrategy{EnableExtraWorkloadForCanary: true},
			wantAnnotations: map[string]string{RolloutStyleAnnotation: "canary"},
		},
		{
			name:            "partition style",
			wantAnnotations: map[string]string{RolloutStyleAnnotation: "partition"},
		},
		{
			name:            "trafficRoutingRef becomes the annotation",
			canary:          rolloutsv1beta1.CanaryStrategy{TrafficRoutingRef: "tr-1"},
			wantAnnotations: map[string]string{RolloutStyleAnnotation: "partition", TrafficRoutingAnnotation: "tr-1"},
		},
		{
			name:            "trafficRoutingRef overrides the annotation",
			annotations:     map[string]string{TrafficRoutingAnnotation: "old"},
			canary:          rolloutsv1beta1.CanaryStrategy{TrafficRoutingRef: "tr-1"},
			wantAnnotations: map[string]string{RolloutStyleAnnotation: "partition", TrafficRoutingAnnotation: "tr-1"},
		},
		{
			name:            "annotation alone is kept",
			annotations:     map[string]string{TrafficRoutingAnnotation: "tr-2"},
			wantAnnotations: map[string]string{RolloutStyleAnnotation: "partition", TrafficRoutingAnnotation: "tr-2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := hubWithCanary(tt.annotations, &tt.canary)
			got := toSpoke(t, in)
			delete(got.Annotations, ConversionDataAnnotation)
			if diff := cmp.Diff(tt.wantAnnotations, got.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			requireSameJSON(t, in, toHub(t, toSpoke(t, in)))
		})
	}
}

func TestConvertRolloutFromV1beta1BlueGreen(t *testing.T) {
	in := &rolloutsv1beta1.Rollout{
		TypeMeta:   hubRolloutType,
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Strategy: rolloutsv1beta1.RolloutStrategy{BlueGreen: &rolloutsv1beta1.BlueGreenStrategy{
				Steps: []rolloutsv1beta1.CanaryStep{{TrafficRoutingStrategy: rolloutsv1beta1.TrafficRoutingStrategy{Traffic: ptrTo("0%")}, Replicas: intOrStr("50%")}},
			}},
		},
		Status: rolloutsv1beta1.RolloutStatus{
			Phase:            rolloutsv1beta1.RolloutPhaseProgressing,
			BlueGreenStatus:  &rolloutsv1beta1.BlueGreenStatus{CommonStatus: rolloutsv1beta1.CommonStatus{CurrentStepIndex: 1, CurrentStepState: rolloutsv1beta1.CanaryStepStatePaused}},
			CurrentStepIndex: 1, CurrentStepState: rolloutsv1beta1.CanaryStepStatePaused,
		},
	}
	got := toSpoke(t, in)
	if !untouchedSpec(got.Spec) || got.Status.Phase != "" || got.Status.CanaryStatus != nil {
		t.Errorf("blue-green Rollout converted to spec %+v status %+v, want empty", got.Spec, got.Status)
	}
	if got.Labels["app"] != "web" || got.Name != "web" {
		t.Errorf("metadata lost: %+v", got.ObjectMeta)
	}
	if saved := savedHubData(t, got); saved.Spec == nil || saved.Status == nil {
		t.Errorf("blue-green spec and status not saved: %+v", saved)
	}
	requireSameJSON(t, in, toHub(t, got))

	edited := got.DeepCopy()
	edited.Spec.ObjectRef.WorkloadRef = &WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	edited.Spec.Strategy.Canary = &CanaryStrategy{}
	back := toHub(t, edited)
	if back.Spec.Strategy.BlueGreen != nil || back.Spec.Strategy.Canary == nil {
		t.Errorf("an old client's new spec was overwritten by the saved blue-green spec: %+v", back.Spec.Strategy)
	}
	if back.Status.BlueGreenStatus == nil {
		t.Errorf("untouched status not restored")
	}
}

func TestConvertRolloutFromV1beta1Matches(t *testing.T) {
	prefix := gatewayv1.PathMatchPathPrefix
	exact := gatewayv1.HeaderMatchExact
	match := rolloutsv1beta1.HttpRouteMatch{
		Path:        &gatewayv1.HTTPPathMatch{Type: &prefix, Value: ptrTo("/api")},
		Headers:     []gatewayv1.HTTPHeaderMatch{{Type: &exact, Name: "x-canary", Value: "on"}},
		QueryParams: []gatewayv1.HTTPQueryParamMatch{{Name: "canary", Value: "true"}},
	}
	in := hubWithCanary(nil, &rolloutsv1beta1.CanaryStrategy{Steps: []rolloutsv1beta1.CanaryStep{
		{TrafficRoutingStrategy: rolloutsv1beta1.TrafficRoutingStrategy{Matches: []rolloutsv1beta1.HttpRouteMatch{match}}, Replicas: intOrStr("1")},
	}})
	got := toSpoke(t, in)
	want := []HttpRouteMatch{{Headers: match.Headers}}
	if diff := cmp.Diff(want, got.Spec.Strategy.Canary.Steps[0].Matches); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
	requireSameJSON(t, in, toHub(t, got))

	edited := got.DeepCopy()
	steps := edited.Spec.Strategy.Canary.Steps
	steps[0].Matches = append(steps[0].Matches, HttpRouteMatch{Headers: match.Headers})
	back := toHub(t, edited)
	for i, m := range back.Spec.Strategy.Canary.Steps[0].Matches {
		if m.Path != nil || m.QueryParams != nil {
			t.Errorf("match %d got saved path/query after the client changed the matches", i)
		}
	}
}

func TestConvertRolloutEditsByOldClientsWin(t *testing.T) {
	tests := []struct {
		name  string
		hub   *rolloutsv1beta1.Rollout
		edit  func(*Rollout)
		check func(*testing.T, *rolloutsv1beta1.Rollout)
	}{
		{
			name: "edited weight replaces saved traffic",
			hub: hubWithCanary(nil, &rolloutsv1beta1.CanaryStrategy{Steps: []rolloutsv1beta1.CanaryStep{
				{TrafficRoutingStrategy: rolloutsv1beta1.TrafficRoutingStrategy{Traffic: ptrTo("05%")}, Replicas: intOrStr("1")},
			}}),
			edit: func(r *Rollout) { r.Spec.Strategy.Canary.Steps[0].Weight = ptrTo[int32](10) },
			check: func(t *testing.T, got *rolloutsv1beta1.Rollout) {
				if traffic := got.Spec.Strategy.Canary.Steps[0].Traffic; traffic == nil || *traffic != "10%" {
					t.Errorf("traffic = %v, want 10%%", traffic)
				}
			},
		},
		{
			name: "edited weight gives replicas",
			hub: hubWithCanary(nil, &rolloutsv1beta1.CanaryStrategy{Steps: []rolloutsv1beta1.CanaryStep{
				{TrafficRoutingStrategy: rolloutsv1beta1.TrafficRoutingStrategy{Traffic: ptrTo("5%")}},
			}}),
			edit: func(r *Rollout) { r.Spec.Strategy.Canary.Steps[0].Weight = ptrTo[int32](10) },
			check: func(t *testing.T, got *rolloutsv1beta1.Rollout) {
				if replicas := got.Spec.Strategy.Canary.Steps[0].Replicas; replicas == nil || replicas.String() != "10%" {
					t.Errorf("replicas = %v, want 10%%", replicas)
				}
			},
		},
		{
			name: "edited rolling-style annotation decides the style",
			hub:  hubWithCanary(nil, &rolloutsv1beta1.CanaryStrategy{}),
			edit: func(r *Rollout) { r.Annotations[RolloutStyleAnnotation] = "canary" },
			check: func(t *testing.T, got *rolloutsv1beta1.Rollout) {
				if !got.Spec.Strategy.Canary.EnableExtraWorkloadForCanary || got.Annotations[RolloutStyleAnnotation] != "canary" {
					t.Errorf("style not taken from the edited annotation: %v %v", got.Spec.Strategy.Canary.EnableExtraWorkloadForCanary, got.Annotations)
				}
			},
		},
		{
			name: "edited trafficrouting annotation fills trafficRoutingRef",
			hub:  hubWithCanary(map[string]string{TrafficRoutingAnnotation: "tr-a"}, &rolloutsv1beta1.CanaryStrategy{}),
			edit: func(r *Rollout) { r.Annotations[TrafficRoutingAnnotation] = "tr-b" },
			check: func(t *testing.T, got *rolloutsv1beta1.Rollout) {
				if got.Spec.Strategy.Canary.TrafficRoutingRef != "tr-b" {
					t.Errorf("trafficRoutingRef = %q, want tr-b", got.Spec.Strategy.Canary.TrafficRoutingRef)
				}
			},
		},
		{
			name: "approval through v1alpha1 moves the top-level mirror",
			hub: func() *rolloutsv1beta1.Rollout {
				r := hubWithCanary(nil, &rolloutsv1beta1.CanaryStrategy{})
				r.Status.CanaryStatus = &rolloutsv1beta1.CanaryStatus{CommonStatus: rolloutsv1beta1.CommonStatus{
					CurrentStepIndex: 2, CurrentStepState: rolloutsv1beta1.CanaryStepStatePaused,
				}}
				r.Status.CurrentStepIndex, r.Status.CurrentStepState = 1, rolloutsv1beta1.CanaryStepStateUpgrade
				return r
			}(),
			edit: func(r *Rollout) { r.Status.CanaryStatus.CurrentStepState = CanaryStepStateReady },
			check: func(t *testing.T, got *rolloutsv1beta1.Rollout) {
				if got.Status.CurrentStepIndex != 2 || got.Status.CurrentStepState != rolloutsv1beta1.CanaryStepStateReady {
					t.Errorf("mirror = %d %s, want 2 StepReady", got.Status.CurrentStepIndex, got.Status.CurrentStepState)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireSameJSON(t, tt.hub, toHub(t, toSpoke(t, tt.hub)))
			spoke := toSpoke(t, tt.hub)
			tt.edit(spoke)
			tt.check(t, toHub(t, spoke))
		})
	}
}
