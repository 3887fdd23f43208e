package inject

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func barePod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
}

func TestPodHashes(t *testing.T) {
	key := kruiseappsv1alpha1.SidecarSetHashAnnotation
	ts := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cases := []struct {
		name string
		raw  *string
		want map[string]PodSidecarSet
	}{
		{name: "missing", want: map[string]PodSidecarSet{}},
		{name: "empty", raw: ptr(""), want: map[string]PodSidecarSet{}},
		{name: "current format", raw: ptr(`{"scs":{"updateTimestamp":"2026-01-02T03:04:05Z","hash":"h1","sidecarSetName":"scs","sidecarList":["scs"],"controllerRevision":"scs-1"}}`),
			want: map[string]PodSidecarSet{"scs": {UpdateTimestamp: ts, Hash: "h1", SidecarSetName: "scs", SidecarList: []string{"scs"}, ControllerRevision: "scs-1"}}},
		{name: "old plain format", raw: ptr(`{"scs":"h1","logs":"h2"}`),
			want: map[string]PodSidecarSet{"scs": {Hash: "h1", SidecarSetName: "scs"}, "logs": {Hash: "h2", SidecarSetName: "logs"}}},
		{name: "garbage reads as empty", raw: ptr(`not json`), want: map[string]PodSidecarSet{}},
		{name: "a list reads as empty", raw: ptr(`["scs"]`), want: map[string]PodSidecarSet{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := barePod()
			if tc.raw != nil {
				pod.Annotations = map[string]string{key: *tc.raw}
			}
			got := PodHashes(pod, key)
			if !maps.EqualFunc(got, tc.want, equalEntry) {
				t.Errorf("PodHashes = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func equalEntry(a, b PodSidecarSet) bool {
	return a.UpdateTimestamp.Equal(&b.UpdateTimestamp) && a.Hash == b.Hash && a.SidecarSetName == b.SidecarSetName &&
		slices.Equal(a.SidecarList, b.SidecarList) && a.ControllerRevision == b.ControllerRevision
}

func TestSetPodHashesRoundTrips(t *testing.T) {
	pod := barePod()
	want := map[string]PodSidecarSet{"a": {UpdateTimestamp: now, Hash: "h", SidecarSetName: "a", SidecarList: []string{"x", "y"}, ControllerRevision: "a-1"}}
	SetPodHashes(pod, kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation, want)
	if got := PodHashes(pod, kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation); !maps.EqualFunc(got, want, equalEntry) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	// upstream's field names, so that upstream reads what Flotilla writes
	raw := pod.Annotations[kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation]
	if !containsAll(raw, `"updateTimestamp":"2026-12-04T10:00:00Z"`, `"hash":"h"`, `"sidecarSetName":"a"`, `"sidecarList":["x","y"]`, `"controllerRevision":"a-1"`) {
		t.Errorf("annotation %s lacks upstream's fields", raw)
	}
}

func TestInjectedSidecarSets(t *testing.T) {
	pod := barePod()
	if got := InjectedSidecarSets(pod); got != nil {
		t.Errorf("no annotation: %v, want nil", got)
	}
	SetInjectedSidecarSets(pod, []string{"b", "a", "b"})
	if got := pod.Annotations[kruiseappsv1alpha1.SidecarSetListAnnotation]; got != "a,b" {
		t.Errorf("annotation %q, want a,b", got)
	}
	if got := InjectedSidecarSets(pod); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("InjectedSidecarSets = %v", got)
	}
	if !IsInjected(pod, "a") || IsInjected(pod, "c") {
		t.Errorf("IsInjected wrong for %v", pod.Annotations)
	}
}

func TestHotUpgradeAnnotations(t *testing.T) {
	key := kruiseappsv1alpha1.SidecarSetWorkingHotUpgradeContainerAnnotation
	cases := []struct {
		name          string
		raw           *string
		wantWorking   string
		wantOther     string
		wantRecordLen int
	}{
		{name: "no record: the second counts as working", wantWorking: "envoy-2", wantOther: "envoy-1"},
		{name: "first working", raw: ptr(`{"envoy":"envoy-1"}`), wantWorking: "envoy-1", wantOther: "envoy-2", wantRecordLen: 1},
		{name: "second working", raw: ptr(`{"envoy":"envoy-2","mosn":"mosn-1"}`), wantWorking: "envoy-2", wantOther: "envoy-1", wantRecordLen: 2},
		{name: "garbage", raw: ptr(`{`), wantWorking: "envoy-2", wantOther: "envoy-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := barePod()
			if tc.raw != nil {
				pod.Annotations = map[string]string{key: *tc.raw}
			}
			working, other := HotUpgradeContainers(pod, "envoy")
			if working != tc.wantWorking || other != tc.wantOther {
				t.Errorf("HotUpgradeContainers = %s, %s; want %s, %s", working, other, tc.wantWorking, tc.wantOther)
			}
			if got := WorkingHotUpgradeContainers(pod); len(got) != tc.wantRecordLen {
				t.Errorf("WorkingHotUpgradeContainers = %v, want %d entries", got, tc.wantRecordLen)
			}
		})
	}
	pod := barePod()
	SetWorkingHotUpgradeContainers(pod, map[string]string{"envoy": "envoy-2"})
	if got := pod.Annotations[key]; got != `{"envoy":"envoy-2"}` {
		t.Errorf("annotation %s", got)
	}
}

func ptr[T any](v T) *T { return &v }

// Pods share parsed annotations: what one caller does to its map must not reach another pod's reading.
func TestPodHashesAreTheCallersToChange(t *testing.T) {
	key := kruiseappsv1alpha1.SidecarSetHashAnnotation
	raw := `{"scs":{"updateTimestamp":"2026-01-02T03:04:05Z","hash":"h1","sidecarSetName":"scs","sidecarList":["scs"]}}`
	a, b := barePod(), barePod()
	a.Annotations, b.Annotations = map[string]string{key: raw}, map[string]string{key: raw}
	first := PodHashes(a, key)
	first["scs"] = PodSidecarSet{Hash: "changed"}
	delete(first, "scs")
	first["other"] = PodSidecarSet{Hash: "h2"}
	if got := PodHashes(b, key); len(got) != 1 || got["scs"].Hash != "h1" {
		t.Errorf("a change to one pod's hashes reached another's: %+v", got)
	}
	if got := PodHash(b, "scs"); got != "h1" {
		t.Errorf("PodHash %q, want h1", got)
	}
}

func TestParsedHashesAreBounded(t *testing.T) {
	for i := range hashMemoSize + 10 {
		raw := `{"s` + strings.Repeat("x", i%7) + `":"h"}` + strings.Repeat(" ", i/7)
		if got := parsedHashesOf(raw); len(got) != 1 {
			t.Fatalf("%q read as %+v", raw, got)
		}
	}
	if n := parsedHashes.Len(); n > hashMemoSize {
		t.Errorf("the memo holds %d entries, more than %d", n, hashMemoSize)
	}
	if got := parsedHashesOf("not json"); len(got) != 0 {
		t.Errorf("a malformed annotation read as %+v", got)
	}
}
