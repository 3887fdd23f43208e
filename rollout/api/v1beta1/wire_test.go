package v1beta1

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Fields clients rely on being present even at their zero value (Argo CD's health script, kubectl
// columns, status patches) must be serialised; optional ones must not.
func TestZeroValuesOnTheWire(t *testing.T) {
	tests := []struct {
		name    string
		obj     any
		present []string
		absent  []string
	}{
		{
			name:    "rollout status",
			obj:     RolloutStatus{},
			present: []string{`"currentStepIndex":0`, `"currentStepState":""`},
			absent:  []string{"canaryStatus", "blueGreenStatus", "phase", "message", "observedGeneration"},
		},
		{
			name: "canary status",
			obj:  CanaryStatus{},
			present: []string{
				`"podTemplateHash":""`, `"currentStepIndex":0`, `"nextStepIndex":0`, `"finalisingStep":""`,
				`"currentStepState":""`, `"canaryRevision":""`, `"canaryReplicas":0`, `"canaryReadyReplicas":0`,
			},
			absent: []string{"observedWorkloadGeneration", "observedRolloutID", "rolloutHash", "stableRevision", "lastUpdateTime", "message"},
		},
		{
			name:    "blue-green status",
			obj:     BlueGreenStatus{},
			present: []string{`"updatedRevision":""`, `"updatedReplicas":0`, `"updatedReadyReplicas":0`, `"nextStepIndex":0`},
		},
		{
			name:    "release plan",
			obj:     ReleasePlan{},
			present: []string{`"batches":null`, `"enableExtraWorkloadForCanary":false`},
			absent:  []string{"rollingStyle", "batchPartition", "finalizingPolicy"},
		},
		{
			name:    "batch status",
			obj:     BatchReleaseCanaryStatus{},
			present: []string{`"currentBatch":0`},
			absent:  []string{"batchState", "updatedReplicas", "noNeedUpdateReplicas"},
		},
		{
			name:    "rollout spec",
			obj:     RolloutSpec{},
			present: []string{`"disabled":false`, `"workloadRef":{"apiVersion":"","kind":"","name":""}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.present {
				if !strings.Contains(string(raw), want) {
					t.Errorf("%s lacks %s", raw, want)
				}
			}
			for _, key := range tt.absent {
				if strings.Contains(string(raw), `"`+key+`"`) {
					t.Errorf("%s has %s", raw, key)
				}
			}
		})
	}
}

// blueGreenRollout is a v1beta1 manifest in upstream's documented shape.
const blueGreenRollout = `
apiVersion: rollouts.kruise.io/v1beta1
kind: Rollout
metadata:
  name: rollouts-demo
  annotations:
    rollouts.kruise.io/trafficrouting: tr-demo
spec:
  workloadRef:
    apiVersion: apps/v1
    kind: Deployment
    name: echoserver
  strategy:
    blueGreen:
      steps:
      - replicas: 100%
        traffic: 0%
      - replicas: 100%
        traffic: 50%
        matches:
        - path:
            type: PathPrefix
            value: /api
          headers:
          - type: Exact
            name: x-canary
            value: "on"
          queryParams:
          - name: canary
            value: "true"
        requestHeaderModifier:
          set:
          - name: x-env
            value: green
        pause:
          duration: 60
      trafficRoutings:
      - service: echoserver
        gracePeriodSeconds: 10
        gateway:
          httpRouteName: echoserver
      failureThreshold: 20%
status:
  phase: Progressing
  currentStepIndex: 2
  currentStepState: StepPaused
  blueGreenStatus:
    currentStepIndex: 2
    currentStepState: StepPaused
    nextStepIndex: -1
    finalisingStep: ""
    podTemplateHash: 5d8f7c
    updatedRevision: 6b9c4d
    updatedReplicas: 3
    updatedReadyReplicas: 3
`

func TestDecodeBlueGreenManifest(t *testing.T) {
	var r Rollout
	if err := yaml.UnmarshalStrict([]byte(blueGreenRollout), &r); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	bg := r.Spec.Strategy.BlueGreen
	if r.Spec.Strategy.GetRollingStyle() != BlueGreenRollingStyle || len(bg.Steps) != 2 {
		t.Fatalf("strategy = %+v", r.Spec.Strategy)
	}
	step := bg.Steps[1]
	match := step.Matches[0]
	if *step.Traffic != "50%" || *match.Path.Value != "/api" || match.QueryParams[0].Name != "canary" || step.RequestHeaderModifier.Set[0].Value != "green" {
		t.Errorf("step 2 = %+v", step)
	}
	if *bg.TrafficRoutings[0].Gateway.HTTPRouteName != "echoserver" || bg.FailureThreshold.String() != "20%" {
		t.Errorf("traffic routing = %+v, failure threshold %v", bg.TrafficRoutings[0], bg.FailureThreshold)
	}
	sub := r.Status.GetSubStatus()
	if sub == nil || sub.CurrentStepState != CanaryStepStatePaused || r.Status.BlueGreenStatus.UpdatedReadyReplicas != 3 {
		t.Errorf("status = %+v", r.Status)
	}
}
