package admission

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestInProgressingValue(t *testing.T) {
	got := InProgressingValue(`we"ird`)
	want := `{"rolloutName":"we\"ird"}`
	if got != want {
		t.Errorf("InProgressingValue = %s, want %s", got, want)
	}
	state, err := ParseInProgressing(map[string]string{rolloutsv1beta1.InProgressingAnnotation: got})
	if err != nil || state == nil || state.RolloutName != `we"ird` {
		t.Errorf("ParseInProgressing(InProgressingValue(x)) = %v, %v", state, err)
	}
}

func TestParseAnnotations(t *testing.T) {
	parsers := map[string]func(map[string]string) (any, error){
		rolloutsv1beta1.InProgressingAnnotation: func(a map[string]string) (any, error) { return ParseInProgressing(a) },
		rolloutsv1beta1.DeploymentStrategyAnnotation: func(a map[string]string) (any, error) {
			return ParseDeploymentStrategy(a)
		},
		rolloutsv1beta1.BatchReleaseControlAnnotation: func(a map[string]string) (any, error) { return ParseControlInfo(a) },
	}
	for key, parse := range parsers {
		t.Run(key, func(t *testing.T) {
			for _, raw := range []string{"{", "[]", `"x"`, "nul", `{"rolloutName":1,"rollingStyle":2,"uid":3}`} {
				_, err := parse(map[string]string{key: raw})
				if err == nil || !strings.Contains(err.Error(), "annotation "+key+" is not valid") {
					t.Errorf("value %q: error %v does not name the annotation", raw, err)
				}
			}
			for _, annotations := range []map[string]string{nil, {}, {key: ""}} {
				if got, err := parse(annotations); err != nil || !isNilPointer(got) {
					t.Errorf("absent annotation: got %v, %v; want nil, nil", got, err)
				}
			}
		})
	}
}

func isNilPointer(v any) bool {
	switch p := v.(type) {
	case *rolloutsv1beta1.InProgressingState:
		return p == nil
	case *rolloutsv1beta1.DeploymentStrategy:
		return p == nil
	case *metav1.OwnerReference:
		return p == nil
	}
	return false
}

func TestParseControlInfo(t *testing.T) {
	got, err := ParseControlInfo(map[string]string{
		rolloutsv1beta1.BatchReleaseControlAnnotation: `{"apiVersion":"rollouts.kruise.io/v1beta1","kind":"BatchRelease","name":"demo","uid":"u1","controller":true}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	controller := true
	want := &metav1.OwnerReference{APIVersion: "rollouts.kruise.io/v1beta1", Kind: "BatchRelease", Name: "demo", UID: "u1", Controller: &controller}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseControlInfo (-want +got):\n%s", diff)
	}
}
