package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// canaryTimeline is a release of steps 1/10% and 3/30%: the weight of
// step 2 arrives 120 ms after its third pod Ready.
func canaryTimeline() trafficTimeline {
	return trafficTimeline{
		Start: at(0), Completed: at(9000),
		PodsReady:  []mark{{1, at(1000)}, {2, at(3000)}, {3, at(3400)}, {10, at(8000)}},
		SetReady:   []mark{{1, at(1040)}, {3, at(3450)}},
		BatchReady: []mark{{1, at(1060)}, {2, at(3480)}},
		Routing:    []mark{{1, at(1070)}, {2, at(3500)}},
		Weights:    []mark{{0, at(200)}, {10, at(1090)}, {30, at(3520)}, {100, at(8500)}},
	}
}

func TestAnalyseTraffic(t *testing.T) {
	got, err := analyseTraffic(canaryTimeline(), []trafficStep{{1, 10}, {3, 30}})
	if err != nil {
		t.Fatal(err)
	}
	want := []trafficStepFigures{
		{Step: trafficStep{1, 10}, Ready: at(1000), Written: at(1090), Latency: 90 * time.Millisecond,
			Path: []hop{{"ReplicaSet status", at(1040), true}, {"batch Ready", at(1060), true},
				{"StepTrafficRouting", at(1070), true}, {"canary-weight 10", at(1090), true}}},
		{Step: trafficStep{3, 30}, Ready: at(3400), Written: at(3520), Latency: 120 * time.Millisecond,
			Path: []hop{{"ReplicaSet status", at(3450), true}, {"batch Ready", at(3480), true},
				{"StepTrafficRouting", at(3500), true}, {"canary-weight 30", at(3520), true}}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(hop{})); diff != "" {
		t.Errorf("analyseTraffic (-want +got):\n%s", diff)
	}
	if l := latencies(got); !cmp.Equal(l, []time.Duration{90 * time.Millisecond, 120 * time.Millisecond}) {
		t.Errorf("latencies = %v", l)
	}
}

// A weight that precedes its pods (a watch stream delivering late) gives a
// negative latency rather than pairing with a later value.
func TestAnalyseTrafficPairsByValue(t *testing.T) {
	tl := canaryTimeline()
	tl.Weights = []mark{{10, at(900)}, {30, at(3520)}, {10, at(4000)}}
	got, err := analyseTraffic(tl, []trafficStep{{1, 10}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Latency != -100*time.Millisecond {
		t.Errorf("latency = %v, want -100ms", got[0].Latency)
	}
}

func TestAnalyseTrafficMissing(t *testing.T) {
	for name, tc := range map[string]struct {
		steps []trafficStep
		want  string
	}{
		"pods":   {[]trafficStep{{1, 10}, {20, 50}}, "step 2: 4 new pods seen Ready, the batch needs 20"},
		"weight": {[]trafficStep{{1, 10}, {3, 50}}, "step 2: canary-weight 50 never seen (seen: 0, 10, 30, 100)"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := analyseTraffic(canaryTimeline(), tc.steps)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestWeightList(t *testing.T) {
	if got := weightList(nil); got != "none" {
		t.Errorf("weightList(nil) = %q", got)
	}
	if got := weightList([]mark{{0, at(0)}, {5, at(1)}}); got != "0, 5" {
		t.Errorf("weightList = %q", got)
	}
}

func ingressWith(annotations map[string]string) *networkingv1.Ingress {
	return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: trafficCanary, Annotations: annotations}}
}

func TestWeightChanges(t *testing.T) {
	w := newWeightChanges()
	for i, obj := range []runtime.Object{
		ingressWith(map[string]string{"nginx.ingress.kubernetes.io/canary": "true"}), // no weight yet
		ingressWith(map[string]string{nginxWeightAnnotation: "0"}),
		ingressWith(map[string]string{nginxWeightAnnotation: "0", "other": "x"}), // unchanged weight
		ingressWith(map[string]string{nginxWeightAnnotation: "10"}),
		ingressWith(map[string]string{nginxWeightAnnotation: "ten"}), // not a number
		&networkingv1.IngressClass{},
		ingressWith(map[string]string{nginxWeightAnnotation: "30"}),
	} {
		w.observe(at(i*10), obj)
	}
	want := []mark{{0, at(10)}, {10, at(30)}, {30, at(60)}}
	if diff := cmp.Diff(want, w.all()); diff != "" {
		t.Errorf("weights (-want +got):\n%s", diff)
	}
}

func rolloutIn(t *testing.T, phase rolloutsv1beta1.RolloutPhase, step int32, state rolloutsv1beta1.CanaryStepState) runtime.Object {
	t.Helper()
	ro := &rolloutsv1beta1.Rollout{Status: rolloutsv1beta1.RolloutStatus{Phase: phase,
		CanaryStatus: &rolloutsv1beta1.CanaryStatus{CommonStatus: rolloutsv1beta1.CommonStatus{
			CurrentStepIndex: step, CurrentStepState: state}}}}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ro)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestRoutingSteps(t *testing.T) {
	r := &routingSteps{marks: newMarks()}
	progressing := rolloutsv1beta1.RolloutPhaseProgressing
	for i, obj := range []runtime.Object{
		rolloutIn(t, progressing, 1, rolloutsv1beta1.CanaryStepStateUpgrade),
		rolloutIn(t, progressing, 1, rolloutsv1beta1.CanaryStepStateTrafficRouting),
		rolloutIn(t, progressing, 1, rolloutsv1beta1.CanaryStepStateTrafficRouting), // seen again
		rolloutIn(t, rolloutsv1beta1.RolloutPhaseHealthy, 2, rolloutsv1beta1.CanaryStepStateTrafficRouting),
		rolloutIn(t, progressing, 2, rolloutsv1beta1.CanaryStepStateTrafficRouting),
	} {
		r.observe(at(i*10), obj)
	}
	want := []mark{{1, at(10)}, {2, at(40)}}
	if diff := cmp.Diff(want, r.all()); diff != "" {
		t.Errorf("routing steps (-want +got):\n%s", diff)
	}
}

// The Rollout keeps an explicit gracePeriodSeconds of 0 through the
// typed decoding, and the check refuses any other value.
func TestCanaryRolloutObject(t *testing.T) {
	ro, err := rolloutFrom(canaryRolloutObject())
	if err != nil {
		t.Fatal(err)
	}
	if err := checkGrace(ro); err != nil {
		t.Error(err)
	}
	steps := ro.Spec.Strategy.GetSteps()
	if len(steps) != len(trafficSteps) || *steps[1].Traffic != "20%" || steps[1].Replicas.IntValue() != 2 ||
		*steps[1].Pause.Duration != 0 || ro.Spec.Strategy.Canary.TrafficRoutings[0].Ingress.Name != trafficIngress {
		t.Errorf("steps %+v", steps)
	}
	ro.Spec.Strategy.Canary.TrafficRoutings[0].GracePeriodSeconds = 3
	if err := checkGrace(ro); err == nil || !strings.Contains(err.Error(), "gracePeriodSeconds 0") {
		t.Errorf("checkGrace of 3 = %v", err)
	}
}
