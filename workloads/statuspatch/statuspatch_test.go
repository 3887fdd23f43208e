package statuspatch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

type status struct {
	Replicas       int32  `json:"replicas"`
	UpdateRevision string `json:"updateRevision,omitempty"`
	LabelSelector  string `json:"labelSelector,omitempty"`
}

func TestReplacing(t *testing.T) {
	for name, tc := range map[string]struct {
		old, next status
		want      map[string]any
	}{
		"zero counters are written": {status{Replicas: 3}, status{},
			map[string]any{"replicas": 0.0}},
		"a field next omits is removed": {status{Replicas: 1, UpdateRevision: "r1", LabelSelector: "app=a"}, status{Replicas: 1, LabelSelector: "app=a"},
			map[string]any{"replicas": 1.0, "labelSelector": "app=a", "updateRevision": nil}},
		"new fields are set": {status{}, status{Replicas: 2, UpdateRevision: "r2"},
			map[string]any{"replicas": 2.0, "updateRevision": "r2"}},
	} {
		raw, err := Replacing(tc.old, tc.next)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got map[string]map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(tc.want, got["status"]); diff != "" {
			t.Errorf("%s: patch (-want +got):\n%s", name, diff)
		}
	}
}

func TestReplacingRejectsWhatJSONCannotEncode(t *testing.T) {
	if _, err := Replacing(status{}, map[string]any{"f": func() {}}); err == nil {
		t.Error("a status JSON cannot encode gave no error")
	}
}

func TestLockedTo(t *testing.T) {
	got, err := LockedTo([]byte(`{"status":{"a":1}}`), "42")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"metadata":{"resourceVersion":"42"},"status":{"a":1}}` {
		t.Errorf("patch %s", got)
	}
	if _, err := LockedTo([]byte(`{`), "1"); err == nil {
		t.Error("a malformed patch is accepted")
	}
}

func TestSendIgnoresNotFound(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	c := fake.NewClientBuilder().WithObjects(pod.DeepCopy()).WithStatusSubresource(&corev1.Pod{}).Build()
	ctx := context.Background()
	if err := send(ctx, c, pod, []byte(`{"status":{"phase":"Running"}}`)); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil || got.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %q after the patch (get: %v)", got.Status.Phase, err)
	}
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"}}
	if err := send(ctx, c, gone, []byte(`{"status":{"phase":"Running"}}`)); err != nil {
		t.Errorf("a deleted object gave %v, want no error", err)
	}
	if err := send(ctx, c, pod, []byte(`{`)); err == nil || !strings.HasPrefix(err.Error(), "patch status: ") {
		t.Errorf("a rejected patch gave %v", err)
	}
}
