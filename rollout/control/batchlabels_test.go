package control

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestBatchPodLabels(t *testing.T) {
	if got := BatchPodLabels("", 3); got != nil {
		t.Errorf("without a rollout-id: %v, want none", got)
	}
	want := map[string]string{rolloutsv1beta1.RolloutIDLabel: "v2", rolloutsv1beta1.RolloutBatchIDLabel: "3"}
	got := BatchPodLabels("v2", 2)
	if !maps.Equal(got, want) {
		t.Errorf("BatchPodLabels(v2, 2) = %v, want %v", got, want)
	}
	if back := BatchPodLabelsFrom(map[string]string{BatchPodLabelsAnnotation: EncodeBatchPodLabels(got)}); !maps.Equal(back, want) {
		t.Errorf("round trip through the annotation: %v", back)
	}
	for name, value := range map[string]string{"malformed": `{"a":`, "other keys only": `{"app":"x"}`} {
		if got := BatchPodLabelsFrom(map[string]string{BatchPodLabelsAnnotation: value}); got != nil {
			t.Errorf("%s: %v, want none", name, got)
		}
	}
}

func TestEqualIgnoreHashAndBatch(t *testing.T) {
	template := func(labels ...string) *corev1.PodTemplateSpec {
		m := map[string]string{}
		for i := 0; i < len(labels); i += 2 {
			m[labels[i]] = labels[i+1]
		}
		return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: m}}
	}
	id, batch, hash := rolloutsv1beta1.RolloutIDLabel, rolloutsv1beta1.RolloutBatchIDLabel, rolloutsv1beta1.PodTemplateHashLabelKey
	tests := []struct {
		name        string
		rs, d       *corev1.PodTemplateSpec
		wantEqual   bool
		wantStamped map[string]string
	}{
		{name: "same", rs: template("app", "web", hash, "h"), d: template("app", "web"), wantEqual: true},
		{name: "stamped", rs: template("app", "web", hash, "h", id, "v2", batch, "1"), d: template("app", "web"),
			wantEqual: true, wantStamped: map[string]string{id: "v2", batch: "1"}},
		{name: "a label the Deployment has too is not a stamp", rs: template("app", "web", id, "v2"),
			d: template("app", "web", id, "v2"), wantEqual: true},
		{name: "stamped over the Deployment's own value", rs: template("app", "web", id, "v2"),
			d: template("app", "web", id, "mine"), wantEqual: true, wantStamped: map[string]string{id: "v2"}},
		{name: "another label differs", rs: template("app", "web", id, "v2", "tier", "x"), d: template("app", "web"),
			wantStamped: map[string]string{id: "v2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EqualIgnoreHashAndBatch(tt.rs, tt.d); got != tt.wantEqual {
				t.Errorf("EqualIgnoreHashAndBatch = %v, want %v", got, tt.wantEqual)
			}
			if got := StampedBatchLabels(tt.rs, tt.d); !maps.Equal(got, tt.wantStamped) {
				t.Errorf("StampedBatchLabels = %v, want %v", got, tt.wantStamped)
			}
		})
	}
}

func TestStampOps(t *testing.T) {
	b1, b2 := BatchPodLabels("v2", 0), BatchPodLabels("v2", 1)
	idPath, batchPath := TemplateLabelPath(rolloutsv1beta1.RolloutIDLabel), TemplateLabelPath(rolloutsv1beta1.RolloutBatchIDLabel)
	tests := []struct {
		name           string
		stamped, want  map[string]string
		wantOperations []map[string]any
	}{
		{name: "unchanged", stamped: b1, want: b1},
		{name: "stamped", want: b1, wantOperations: []map[string]any{
			{"op": "add", "path": idPath, "value": "v2"}, {"op": "add", "path": batchPath, "value": "1"}}},
		{name: "next batch", stamped: b1, want: b2, wantOperations: []map[string]any{
			{"op": "test", "path": batchPath, "value": "1"}, {"op": "add", "path": batchPath, "value": "2"}}},
		{name: "removed", stamped: b2, wantOperations: []map[string]any{
			{"op": "test", "path": idPath, "value": "v2"}, {"op": "remove", "path": idPath},
			{"op": "test", "path": batchPath, "value": "2"}, {"op": "remove", "path": batchPath}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantOperations, StampOps(tt.stamped, tt.want)); diff != "" {
				t.Errorf("operations (-want +got):\n%s", diff)
			}
		})
	}
	if idPath != "/spec/template/metadata/labels/rollouts.kruise.io~1rollout-id" {
		t.Errorf("label path %s: the slash must be escaped", idPath)
	}
}
