package v1alpha1

import (
	"encoding/json"
	"testing"
)

// statusKeys returns the JSON keys a status serializes to.
func statusKeys(t *testing.T, status any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]any{}
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	return keys
}

// Argo CD's CloneSet health check reports "Cloneset is paused" when updatedAvailableReplicas is absent,
// so the zero-valued fields must be dropped exactly where upstream drops them.
func TestCloneSetStatusOmitsLikeUpstream(t *testing.T) {
	keys := statusKeys(t, CloneSetStatus{})
	for _, present := range []string{"replicas", "readyReplicas", "availableReplicas", "updatedReplicas", "updatedReadyReplicas"} {
		if _, ok := keys[present]; !ok {
			t.Errorf("%s missing from zero status %v", present, keys)
		}
	}
	for _, absent := range []string{"updatedAvailableReplicas", "expectedUpdatedReplicas", "observedGeneration", "labelSelector", "updateRevision"} {
		if _, ok := keys[absent]; ok {
			t.Errorf("%s serialized in zero status %v", absent, keys)
		}
	}
}

func TestDaemonSetStatusOmitsLikeUpstream(t *testing.T) {
	keys := statusKeys(t, DaemonSetStatus{})
	for _, present := range []string{"currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady", "updatedNumberScheduled", "daemonSetHash"} {
		if _, ok := keys[present]; !ok {
			t.Errorf("%s missing from zero status %v", present, keys)
		}
	}
	for _, absent := range []string{"numberAvailable", "numberUnavailable", "observedGeneration"} {
		if _, ok := keys[absent]; ok {
			t.Errorf("%s serialized in zero status %v", absent, keys)
		}
	}
}

func TestCloneSetDecodesIntOrStringPartition(t *testing.T) {
	cs := &CloneSet{}
	raw := `{"spec":{"updateStrategy":{"type":"InPlaceIfPossible","partition":"20%","maxUnavailable":2,` +
		`"scatterStrategy":[{"key":"zone","value":"a"}]}}}`
	if err := json.Unmarshal([]byte(raw), cs); err != nil {
		t.Fatal(err)
	}
	us := cs.Spec.UpdateStrategy
	if us.Type != InPlaceIfPossibleCloneSetUpdateStrategyType || us.Partition.String() != "20%" ||
		us.MaxUnavailable.IntValue() != 2 || us.ScatterStrategy[0].Key != "zone" {
		t.Fatalf("unexpected update strategy %+v", us)
	}
}
