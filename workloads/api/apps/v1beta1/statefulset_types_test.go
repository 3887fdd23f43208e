package v1beta1

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Argo CD's StatefulSet health check and kubectl-kruise read these counters; the zero-value shape
// must match upstream's omitempty choices.
func TestStatefulSetStatusOmitsLikeUpstream(t *testing.T) {
	raw, err := json.Marshal(StatefulSetStatus{})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]any{}
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	for _, present := range []string{"replicas", "readyReplicas", "availableReplicas", "currentReplicas", "updatedReplicas"} {
		if _, ok := keys[present]; !ok {
			t.Errorf("%s missing from zero status %v", present, keys)
		}
	}
	for _, absent := range []string{"updatedReadyReplicas", "updatedAvailableReplicas", "volumeClaims", "labelSelector"} {
		if _, ok := keys[absent]; ok {
			t.Errorf("%s serialized in zero status %v", absent, keys)
		}
	}
}

func TestReserveOrdinalsAcceptNumbersAndRanges(t *testing.T) {
	spec := &StatefulSetSpec{}
	if err := json.Unmarshal([]byte(`{"reserveOrdinals":[1,"3-5"],"ordinals":{"start":0}}`), spec); err != nil {
		t.Fatal(err)
	}
	want := []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("3-5")}
	if len(spec.ReserveOrdinals) != 2 || spec.ReserveOrdinals[0] != want[0] || spec.ReserveOrdinals[1] != want[1] {
		t.Fatalf("reserveOrdinals = %v", spec.ReserveOrdinals)
	}
	out, err := json.Marshal(spec.Ordinals)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"start":0}` {
		t.Fatalf("ordinals.start must always serialize, got %s", out)
	}
}
