package rollouthistory

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func rolloutWith(phase rolloutsv1beta1.RolloutPhase, state rolloutsv1beta1.CanaryStepState, id string) *rolloutsv1beta1.Rollout {
	ro := &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}}
	ro.Status.Phase = phase
	ro.Status.CanaryStatus = &rolloutsv1beta1.CanaryStatus{CommonStatus: rolloutsv1beta1.CommonStatus{ObservedRolloutID: id, CurrentStepState: state}}
	return ro
}

func TestReleaseOf(t *testing.T) {
	progressing, healthy := rolloutsv1beta1.RolloutPhaseProgressing, rolloutsv1beta1.RolloutPhaseHealthy
	completed, paused := rolloutsv1beta1.CanaryStepStateCompleted, rolloutsv1beta1.CanaryStepStatePaused
	deleting := rolloutWith(progressing, paused, "v2")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	blueGreen := rolloutWith(healthy, completed, "")
	blueGreen.Status.CanaryStatus = nil
	blueGreen.Status.BlueGreenStatus = &rolloutsv1beta1.BlueGreenStatus{CommonStatus: rolloutsv1beta1.CommonStatus{ObservedRolloutID: "bg", CurrentStepState: completed}}
	longName := rolloutWith(progressing, paused, "v2")
	longName.Name = strings.Repeat("a", 64)
	tests := []struct {
		name string
		ro   *rolloutsv1beta1.Rollout
		want release
	}{
		{"no sub-status", &rolloutsv1beta1.Rollout{Status: rolloutsv1beta1.RolloutStatus{Phase: progressing}}, release{}},
		{"no rollout-id", rolloutWith(progressing, paused, ""), release{}},
		{"progressing", rolloutWith(progressing, paused, "v2"), release{ID: "v2", Stage: stageRunning}},
		{"progressing at the last step", rolloutWith(progressing, completed, "v2"), release{ID: "v2", Stage: stageRunning}},
		{"healthy and completed", rolloutWith(healthy, completed, "v2"), release{ID: "v2", Stage: stageCompleted}},
		{"healthy, not completed", rolloutWith(healthy, paused, "v2"), release{ID: "v2"}},
		{"disabled", rolloutWith(rolloutsv1beta1.RolloutPhaseDisabled, completed, "v2"), release{ID: "v2"}},
		{"deleting", deleting, release{}},
		{"blue-green", blueGreen, release{ID: "bg", Stage: stageCompleted}},
		{"id not a label value", rolloutWith(progressing, paused, "a/b"), release{}},
		{"name not a label value", longName, release{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := releaseOf(tt.ro); got != tt.want {
				t.Errorf("releaseOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	open := &rolloutsv1alpha1.RolloutHistory{}
	done := &rolloutsv1alpha1.RolloutHistory{Status: rolloutsv1alpha1.RolloutHistoryStatus{Phase: rolloutsv1alpha1.RolloutHistoryPhaseCompleted}}
	tests := []struct {
		name  string
		stage stage
		h     *rolloutsv1alpha1.RolloutHistory
		want  action
	}{
		{"running, none yet", stageRunning, nil, actCreate},
		{"running, recorded", stageRunning, open, actNone},
		{"running, already completed", stageRunning, done, actNone},
		{"completed, open history", stageCompleted, open, actComplete},
		{"completed twice", stageCompleted, done, actNone},
		{"completed, never recorded", stageCompleted, nil, actNone},
		{"nothing to do", stageNone, nil, actNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(release{ID: "v2", Stage: tt.stage}, tt.h); got != tt.want {
				t.Errorf("decide = %v, want %v", got, tt.want)
			}
		})
	}
}

func ownedHistory(name string, owner types.UID, created int64) rolloutsv1alpha1.RolloutHistory {
	h := rolloutsv1alpha1.RolloutHistory{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Time{Time: time.Unix(created, 0)}}}
	if owner != "" {
		h.OwnerReferences = []metav1.OwnerReference{{UID: owner, Controller: ptr.To(true), Kind: "Rollout", Name: "web"}}
	}
	return h
}

func TestPickHistory(t *testing.T) {
	tests := []struct {
		name  string
		items []rolloutsv1alpha1.RolloutHistory
		want  string
	}{
		{"none", nil, ""},
		{"owned by a deleted namesake", []rolloutsv1alpha1.RolloutHistory{ownedHistory("web-a", "old", 1)}, ""},
		{"unowned", []rolloutsv1alpha1.RolloutHistory{ownedHistory("web-a", "", 1)}, ""},
		{"one", []rolloutsv1alpha1.RolloutHistory{ownedHistory("web-a", "uid-1", 1)}, "web-a"},
		{"oldest of several", []rolloutsv1alpha1.RolloutHistory{ownedHistory("web-b", "uid-1", 2), ownedHistory("web-c", "uid-1", 1), ownedHistory("web-a", "old", 0)}, "web-c"},
		{"same time: by name", []rolloutsv1alpha1.RolloutHistory{ownedHistory("web-b", "uid-1", 1), ownedHistory("web-a", "uid-1", 1)}, "web-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if h := pickHistory(tt.items, "uid-1"); h != nil {
				got = h.Name
			}
			if got != tt.want {
				t.Errorf("pickHistory = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHistoryName(t *testing.T) {
	long := strings.Repeat("a", 244) + "-." + strings.Repeat("b", 20)
	tests := []struct{ rollout, want string }{
		{"web", "web-x1y2z3"},
		{strings.Repeat("a", 246), strings.Repeat("a", 246) + "-x1y2z3"},
		{strings.Repeat("a", 250), strings.Repeat("a", 246) + "-x1y2z3"},
		{long, strings.Repeat("a", 244) + "-x1y2z3"},
	}
	for _, tt := range tests {
		got := historyName(tt.rollout, "x1y2z3")
		if got != tt.want {
			t.Errorf("historyName(%d chars) = %q, want %q", len(tt.rollout), got, tt.want)
		}
		if len(got) > maxNameLength {
			t.Errorf("historyName too long: %d", len(got))
		}
	}
}

func TestWorkloadRolloutID(t *testing.T) {
	tests := []struct {
		name                string
		labels, annotations map[string]string
		want                string
	}{
		{"none", nil, nil, ""},
		{"annotation", nil, map[string]string{rolloutsv1beta1.RolloutIDLabel: "a"}, "a"},
		{"label wins", map[string]string{rolloutsv1beta1.RolloutIDLabel: "l"}, map[string]string{rolloutsv1beta1.RolloutIDLabel: "a"}, "l"},
		{"empty label falls back", map[string]string{rolloutsv1beta1.RolloutIDLabel: ""}, map[string]string{rolloutsv1beta1.RolloutIDLabel: "a"}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Labels: tt.labels, Annotations: tt.annotations}
			if got := workloadRolloutID(obj); got != tt.want {
				t.Errorf("workloadRolloutID = %q, want %q", got, tt.want)
			}
		})
	}
}

func unstructuredObj(kind, name string, spec map[string]any, meta map[string]any) *unstructured.Unstructured {
	m := map[string]any{"name": name}
	for k, v := range meta {
		m[k] = v
	}
	obj := map[string]any{"kind": kind, "metadata": m}
	if spec != nil {
		obj["spec"] = spec
	}
	return &unstructured.Unstructured{Object: obj}
}

func deploymentSnapshot(id string) *unstructured.Unstructured {
	return unstructuredObj("Deployment", "web", map[string]any{"replicas": int64(2)},
		map[string]any{"annotations": map[string]any{rolloutsv1beta1.RolloutIDLabel: id}})
}

func trafficRollout() *rolloutsv1beta1.Rollout {
	ro := rolloutWith(rolloutsv1beta1.RolloutPhaseProgressing, rolloutsv1beta1.CanaryStepStatePaused, "v2")
	ro.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	ro.Spec.Strategy.Canary = &rolloutsv1beta1.CanaryStrategy{
		Steps: []rolloutsv1beta1.CanaryStep{{Replicas: ptr.To(intstr.FromInt32(1))}},
		TrafficRoutings: []rolloutsv1beta1.TrafficRoutingRef{{
			Service: "web-svc", Ingress: &rolloutsv1beta1.IngressTrafficRouting{Name: "web-ing"},
			Gateway: &rolloutsv1beta1.GatewayTrafficRouting{HTTPRouteName: ptr.To("web-route")},
		}},
	}
	return ro
}

func TestRouteNamesOf(t *testing.T) {
	if got := routeNamesOf(trafficRollout()); got != (routeNames{Service: "web-svc", Ingress: "web-ing", HTTPRoute: "web-route"}) {
		t.Errorf("routeNamesOf = %+v", got)
	}
	if got := routeNamesOf(rolloutWith("", "", "")); got != (routeNames{}) {
		t.Errorf("routeNamesOf without routing = %+v", got)
	}
	gatewayOnly := trafficRollout()
	gatewayOnly.Spec.Strategy.Canary.TrafficRoutings[0].Ingress = nil
	gatewayOnly.Spec.Strategy.Canary.TrafficRoutings[0].Gateway.HTTPRouteName = nil
	if got := routeNamesOf(gatewayOnly); got != (routeNames{Service: "web-svc"}) {
		t.Errorf("routeNamesOf without ingress and route name = %+v", got)
	}
}

func TestNewHistory(t *testing.T) {
	ro := trafficRollout()
	s := snapshots{
		Workload: deploymentSnapshot("v2"),
		Service:  unstructuredObj("Service", "web-svc", map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}, nil),
		Ingress:  unstructuredObj("Ingress", "web-ing", map[string]any{"ingressClassName": "nginx"}, nil),
	}
	h, err := newHistory(ro, "v2", "web-abcdef", s)
	if err != nil {
		t.Fatal(err)
	}
	checkNewMeta(t, h)
	roData, err := json.Marshal(ro.Spec)
	if err != nil {
		t.Fatal(err)
	}
	want := rolloutsv1alpha1.RolloutHistorySpec{
		Rollout: rolloutsv1alpha1.RolloutInfo{RolloutID: "v2", NameAndSpecData: data("web", string(roData))},
		Workload: rolloutsv1alpha1.WorkloadInfo{
			TypeMeta:        metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			NameAndSpecData: data("web", `{"replicas":2}`),
		},
		Service:        rolloutsv1alpha1.ServiceInfo{NameAndSpecData: data("web-svc", `{"ports":[{"port":80}]}`)},
		TrafficRouting: rolloutsv1alpha1.TrafficRoutingInfo{IngressRef: &rolloutsv1alpha1.IngressInfo{NameAndSpecData: data("web-ing", `{"ingressClassName":"nginx"}`)}},
	}
	if diff := cmp.Diff(want, h.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

func data(name, raw string) rolloutsv1alpha1.NameAndSpecData {
	return rolloutsv1alpha1.NameAndSpecData{Name: name, Data: runtime.RawExtension{Raw: []byte(raw)}}
}

func checkNewMeta(t *testing.T, h *rolloutsv1alpha1.RolloutHistory) {
	t.Helper()
	wantLabels := map[string]string{rolloutsv1beta1.RolloutIDLabel: "v2", rolloutsv1beta1.RolloutNameLabel: "web"}
	if diff := cmp.Diff(wantLabels, h.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if h.Name != "web-abcdef" || h.Namespace != "ns" {
		t.Errorf("name = %s/%s", h.Namespace, h.Name)
	}
	if ref := metav1.GetControllerOf(h); ref == nil || ref.UID != "uid-1" || ref.Kind != "Rollout" || ref.APIVersion != "rollouts.kruise.io/v1beta1" {
		t.Errorf("controller = %+v", ref)
	}
}

func TestNewHistoryNotThisRelease(t *testing.T) {
	tests := []struct {
		name     string
		workload *unstructured.Unstructured
	}{
		{"workload gone", nil},
		{"workload without id", deploymentSnapshot("")},
		{"workload with another id", deploymentSnapshot("v3")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newHistory(trafficRollout(), "v2", "web-abcdef", snapshots{Workload: tt.workload})
			if !errors.Is(err, errNotThisRelease) {
				t.Errorf("err = %v, want errNotThisRelease", err)
			}
		})
	}
}

func TestSpecDataWithoutSpec(t *testing.T) {
	got, err := specData(unstructuredObj("ConfigMap", "cm", nil, nil))
	if err != nil || got.Name != "cm" || got.Data.Raw != nil {
		t.Errorf("specData = %+v, %v", got, err)
	}
}

func TestPodSelector(t *testing.T) {
	withSelector := func(sel any) *unstructured.Unstructured {
		return unstructuredObj("Deployment", "web", map[string]any{"selector": sel}, nil)
	}
	pod := func(app, id string) labels.Set {
		return labels.Set{"app": app, rolloutsv1beta1.RolloutIDLabel: id}
	}
	tests := []struct {
		name     string
		workload *unstructured.Unstructured
		matches  []labels.Set
		misses   []labels.Set
	}{
		{"match labels", withSelector(map[string]any{"matchLabels": map[string]any{"app": "web"}}),
			[]labels.Set{pod("web", "v2")}, []labels.Set{pod("web", "v1"), pod("api", "v2"), {"app": "web"}}},
		{"no selector", unstructuredObj("Deployment", "web", map[string]any{}, nil), nil, []labels.Set{pod("web", "v2")}},
		{"empty selector", withSelector(map[string]any{}), nil, []labels.Set{pod("web", "v2")}},
		{"malformed selector", withSelector("app=web"), nil, []labels.Set{pod("web", "v2")}},
		{"bad operator", withSelector(map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "Near"}}}), nil, []labels.Set{pod("web", "v2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := podSelector(tt.workload, "v2")
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range tt.matches {
				if !sel.Matches(l) {
					t.Errorf("%s does not match %v", sel, l)
				}
			}
			for _, l := range tt.misses {
				if sel.Matches(l) {
					t.Errorf("%s matches %v", sel, l)
				}
			}
		})
	}
}

func batchPod(name, batch, ip, node string, deleting bool) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{rolloutsv1beta1.RolloutBatchIDLabel: batch}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{PodIP: ip},
	}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	}
	return p
}

func TestCompletedStatus(t *testing.T) {
	pods := []corev1.Pod{
		batchPod("web-c", "2", "10.0.0.3", "n1", false),
		batchPod("web-a", "1", "10.0.0.1", "n0", false),
		batchPod("web-b", "2", "", "", false),
		batchPod("web-d", "3", "10.0.0.4", "n1", false),
		batchPod("web-e", "x", "10.0.0.5", "n1", false),
		batchPod("web-f", "", "10.0.0.6", "n1", false),
		batchPod("web-g", "1", "10.0.0.7", "n1", true),
	}
	got := completedStatus(2, pods)
	want := rolloutsv1alpha1.RolloutHistoryStatus{
		Phase: rolloutsv1alpha1.RolloutHistoryPhaseCompleted,
		CanarySteps: []rolloutsv1alpha1.CanaryStepInfo{
			{CanaryStepIndex: 1, Pods: []rolloutsv1alpha1.Pod{{Name: "web-a", IP: "10.0.0.1", NodeName: "n0"}}},
			{CanaryStepIndex: 2, Pods: []rolloutsv1alpha1.Pod{{Name: "web-b"}, {Name: "web-c", IP: "10.0.0.3", NodeName: "n1"}}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("completedStatus (-want +got):\n%s", diff)
	}
	empty := completedStatus(2, nil)
	if len(empty.CanarySteps) != 2 || empty.CanarySteps[1].CanaryStepIndex != 2 || empty.CanarySteps[1].Pods != nil {
		t.Errorf("completedStatus without pods = %+v", empty)
	}
	if none := completedStatus(0, pods); none.CanarySteps != nil || none.Phase != rolloutsv1alpha1.RolloutHistoryPhaseCompleted {
		t.Errorf("completedStatus without steps = %+v", none)
	}
}
