package inplaceupdate

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

func TestDeferThenResume(t *testing.T) {
	pod := runningPod()
	pod.Labels["gone"] = "x"
	spec, ok := Calculate(template("app:1", pod.Labels), template("app:2", map[string]string{"app": "a", "version": "2"}))
	if !ok {
		t.Fatal("image and label change must be in place")
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := Defer(pod, spec, "rev-2", metav1.NewTime(start), 30); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Containers[0].Image != "app:1" || pod.Labels["version"] != "1" {
		t.Fatalf("a deferred update must leave the pod alone: image %s, labels %v", pod.Spec.Containers[0].Image, pod.Labels)
	}
	if done, _ := Completed(pod); done {
		t.Fatal("a pod in its grace period is not done")
	}
	assertPendingWire(t, pod.Annotations[kruiseappspub.InPlaceUpdateGraceKey])

	got, left, held, err := Deferred(pod, start.Add(10*time.Second))
	if err != nil || !held || left != 20*time.Second {
		t.Fatalf("Deferred = left %v, held %v, %v; want 20s left", left, held, err)
	}
	Resume(pod, got)
	if pod.Spec.Containers[0].Image != "app:2" || pod.Labels["version"] != "2" || pod.Labels["gone"] != "" {
		t.Fatalf("resume did not apply the update: image %s, labels %v", pod.Spec.Containers[0].Image, pod.Labels)
	}
	if _, _, held, _ := Deferred(pod, start); held {
		t.Fatal("the pending annotation must be gone after Resume")
	}
	state, err := kruiseappspub.ParseInPlaceUpdateState(pod)
	if err != nil || state.LastContainerStatuses["app"].ImageID != "app@1" {
		t.Fatalf("state = %+v, %v; the image ID from before the grace must be kept", state, err)
	}
}

// assertPendingWire checks the annotation's upstream field names: metaDataPatch is base64 JSON bytes.
func assertPendingWire(t *testing.T, raw string) {
	t.Helper()
	var wire map[string]any
	if err := json.Unmarshal([]byte(raw), &wire); err != nil {
		t.Fatal(err)
	}
	if wire["revision"] != "rev-2" || wire["graceSeconds"] != float64(30) {
		t.Fatalf("pending annotation = %s", raw)
	}
	if images, _ := wire["containerImages"].(map[string]any); images["app"] != "app:2" {
		t.Fatalf("containerImages in %s", raw)
	}
	if _, ok := wire["metaDataPatch"].(string); !ok {
		t.Fatalf("metaDataPatch must be base64 bytes: %s", raw)
	}
}

func TestDeferredMalformed(t *testing.T) {
	pod := runningPod()
	pod.Annotations = map[string]string{kruiseappspub.InPlaceUpdateGraceKey: "{"}
	if _, _, held, err := Deferred(pod, time.Now()); !held || err == nil {
		t.Fatalf("a malformed pending annotation must be held and an error: %v %v", held, err)
	}
}
