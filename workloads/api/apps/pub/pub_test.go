package pub

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podMeta(annotations map[string]string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Annotations: annotations}
}

func TestGetInPlaceUpdateStatePrefersCurrentKey(t *testing.T) {
	obj := podMeta(map[string]string{InPlaceUpdateStateKey: "new", InPlaceUpdateStateKeyOld: "old"})
	if v, ok := GetInPlaceUpdateState(obj); !ok || v != "new" {
		t.Fatalf("got %q,%v want new,true", v, ok)
	}
	legacy := podMeta(map[string]string{InPlaceUpdateStateKeyOld: "old"})
	if v, ok := GetInPlaceUpdateState(legacy); !ok || v != "old" {
		t.Fatalf("got %q,%v want old,true", v, ok)
	}
	if _, ok := GetInPlaceUpdateState(podMeta(nil)); ok {
		t.Fatal("absent annotation reported present")
	}
}

func TestRemoveInPlaceUpdateGraceDropsBothKeys(t *testing.T) {
	obj := podMeta(map[string]string{InPlaceUpdateGraceKey: "{}", InPlaceUpdateGraceKeyOld: "{}", "keep": "x"})
	RemoveInPlaceUpdateGrace(obj)
	if _, ok := GetInPlaceUpdateGrace(obj); ok {
		t.Fatal("grace annotation still present")
	}
	if obj.Annotations["keep"] != "x" {
		t.Fatal("unrelated annotation removed")
	}
	RemoveInPlaceUpdateGrace(podMeta(nil)) // must not panic on nil annotations
}

func TestParseInPlaceUpdateStateDecodesUpstreamShape(t *testing.T) {
	raw := `{"revision":"web-6c5f","updateTimestamp":"2024-01-02T03:04:05Z",` +
		`"lastContainerStatuses":{"main":{"imageID":"docker.io/nginx@sha256:1"}},` +
		`"nextContainerImages":{"side":"busybox:2"},"preCheckBeforeNext":{"containersRequiredReady":["main"]}}`
	state, err := ParseInPlaceUpdateState(podMeta(map[string]string{InPlaceUpdateStateKeyOld: raw}))
	if err != nil {
		t.Fatal(err)
	}
	if state.Revision != "web-6c5f" || state.LastContainerStatuses["main"].ImageID != "docker.io/nginx@sha256:1" ||
		state.NextContainerImages["side"] != "busybox:2" || state.PreCheckBeforeNext.ContainersRequiredReady[0] != "main" {
		t.Fatalf("unexpected state %+v", state)
	}
	if _, err := ParseInPlaceUpdateState(podMeta(map[string]string{InPlaceUpdateStateKey: "{"})); err == nil {
		t.Fatal("malformed state accepted")
	}
	if s, err := ParseInPlaceUpdateState(podMeta(nil)); s != nil || err != nil {
		t.Fatalf("absent state: got %v, %v", s, err)
	}
}

func TestInPlaceUpdateStateOmitsOptionalFields(t *testing.T) {
	out, err := json.Marshal(InPlaceUpdateState{Revision: "r"})
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, absent := range []string{"updateResources", "nextContainerImages", "preCheckBeforeNext", "containerBatchesRecord"} {
		if strings.Contains(got, absent) {
			t.Errorf("%s serialized in %s", absent, got)
		}
	}
	for _, present := range []string{`"revision":"r"`, `"lastContainerStatuses":null`, `"verticalUpdateOnly":false`} {
		if !strings.Contains(got, present) {
			t.Errorf("%s missing in %s", present, got)
		}
	}
}

func TestGetRuntimeContainerMetaSet(t *testing.T) {
	raw := `{"containers":[{"name":"main","containerID":"containerd://a","restartCount":2,"hashes":{"plainHash":7}}]}`
	set, err := GetRuntimeContainerMetaSet(podMeta(map[string]string{RuntimeContainerMetaKey: raw}))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Containers) != 1 || set.Containers[0].RestartCount != 2 || set.Containers[0].Hashes.PlainHash != 7 {
		t.Fatalf("unexpected set %+v", set)
	}
	if _, err := GetRuntimeContainerMetaSet(podMeta(map[string]string{RuntimeContainerMetaKey: "x"})); err == nil {
		t.Fatal("malformed meta accepted")
	}
}

func TestHasUnavailableLabel(t *testing.T) {
	if !HasUnavailableLabel(map[string]string{"unavailable-pod.kruise.io/offline": "true"}) {
		t.Fatal("prefixed label not detected")
	}
	if HasUnavailableLabel(map[string]string{"app": "web"}) || HasUnavailableLabel(nil) {
		t.Fatal("false positive")
	}
}

func TestUpdatePriorityStrategyValidate(t *testing.T) {
	sel := metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	cases := []struct {
		name    string
		s       *UpdatePriorityStrategy
		wantErr string
	}{
		{"nil", nil, ""},
		{"weights", &UpdatePriorityStrategy{WeightPriority: []UpdatePriorityWeightTerm{{Weight: 50, MatchSelector: sel}}}, ""},
		{"both kinds", &UpdatePriorityStrategy{
			WeightPriority: []UpdatePriorityWeightTerm{{Weight: 1, MatchSelector: sel}},
			OrderPriority:  []UpdatePriorityOrderTerm{{OrderedKey: "k"}},
		}, "only one of"},
		{"weight too big", &UpdatePriorityStrategy{WeightPriority: []UpdatePriorityWeightTerm{{Weight: 101, MatchSelector: sel}}}, "weightPriority[0]: weight 101"},
		{"empty selector", &UpdatePriorityStrategy{WeightPriority: []UpdatePriorityWeightTerm{{Weight: 1}}}, "matchSelector can not be empty"},
		{"empty key", &UpdatePriorityStrategy{OrderPriority: []UpdatePriorityOrderTerm{{OrderedKey: "k"}, {}}}, "orderPriority[1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertErr(t, tc.s.Validate(), tc.wantErr)
		})
	}
}

func TestUpdateScatterStrategyValidate(t *testing.T) {
	assertErr(t, UpdateScatterStrategy{{Key: "zone", Value: "a"}, {Key: "zone", Value: "b"}}.Validate(), "")
	assertErr(t, UpdateScatterStrategy{{Key: "zone", Value: "a"}, {Key: "zone", Value: "a"}}.Validate(), "scatterStrategy[1]: duplicated")
	assertErr(t, UpdateScatterStrategy{{Value: "a"}}.Validate(), "scatterStrategy[0]: key should not be empty")
}

func assertErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want it to contain %q", err, want)
	}
}
