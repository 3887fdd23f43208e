package workloadspread

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/internal/plan"
)

func maxOf(v intstr.IntOrString) *intstr.IntOrString { return &v }

// subsetOf reads the subset the webhook placed the pod in ("" when none) and checks the pod requires its zone.
func subsetOf(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	m, ok := plan.MatchedOf(pod)
	if !ok {
		return ""
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || terms[0].MatchExpressions[0].Values[0] != m.Subset {
		t.Errorf("pod %s in subset %s requires %+v", pod.Name, m.Subset, terms)
	}
	return m.Subset
}

// Five pods of a ReplicaSet spread 2/2/1 over zone-a (max 2), zone-b (max 2) and zone-c (unlimited); the
// deletion costs (upstream's: 100×(subsets−index), the surplus −100×(index+1)) make the surplus go first, then
// the later subsets; a deleted pod's room is taken by the next pod.
func TestSpreadsPodsOverSubsets(t *testing.T) {
	e := start(t)
	rs := e.replicaSet(t, "web", 5)
	ws := e.spread(t, rs, []string{"zone-a", "zone-b", "zone-c"},
		[]*intstr.IntOrString{maxOf(intstr.FromInt32(2)), maxOf(intstr.FromInt32(2)), nil})
	pods := map[string]*corev1.Pod{}
	want := map[string]string{"web-0": "zone-a", "web-1": "zone-a", "web-2": "zone-b", "web-3": "zone-b", "web-4": "zone-c"}
	for i := range 5 {
		pod, err := e.pod(t.Context(), rs, fmt.Sprintf("web-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if got := subsetOf(t, pod); got != want[pod.Name] {
			t.Errorf("pod %s placed in %q, want %q", pod.Name, got, want[pod.Name])
		}
		e.markReady(t, pod)
		pods[pod.Name] = pod
	}
	e.waitSubsets(t, ws, map[string][2]int32{"zone-a": {2, 0}, "zone-b": {2, 0}, "zone-c": {1, -1}})
	e.waitCosts(t, map[string]string{"web-0": "300", "web-1": "300", "web-2": "200", "web-3": "200", "web-4": "100"})

	// One pod fewer allowed in zone-a: one of its pods becomes the surplus, deleted first.
	e.update(t, ws, func(ws *kruiseappsv1alpha1.WorkloadSpread) {
		ws.Spec.Subsets[0].MaxReplicas = maxOf(intstr.FromInt32(1))
	})
	e.waitCosts(t, map[string]string{"web-0": "300", "web-1": "-100", "web-2": "200", "web-3": "200", "web-4": "100"})

	// Deleting a zone-b pod frees its room at once: the next pod (named by the API server) takes it.
	if err := e.c.Delete(t.Context(), pods["web-2"]); err != nil {
		t.Fatal(err)
	}
	pod, err := e.pod(t.Context(), rs, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := subsetOf(t, pod); got != "zone-b" {
		t.Errorf("the replacement of a zone-b pod went to %q", got)
	}
	m, _ := plan.MatchedOf(pod)
	if m.UID == "" {
		t.Errorf("a pod created without a name is matched without a uid: %+v", m)
	}
	e.markReady(t, pod)
	e.waitSubsets(t, ws, map[string][2]int32{"zone-a": {2, 0}, "zone-b": {2, 0}, "zone-c": {1, -1}})
}

// Pods created at once never overfill a subset: with room for 4 (2, and 33% of 6 rounded up), six pods give
// 2 + 2 placed and 2 left alone.
func TestConcurrentCreationsNeverOverfill(t *testing.T) {
	e := start(t)
	rs := e.replicaSet(t, "burst", 6)
	e.spread(t, rs, []string{"zone-a", "zone-b"}, []*intstr.IntOrString{maxOf(intstr.FromInt32(2)), maxOf(intstr.FromString("33%"))})
	var mu sync.Mutex
	placed := map[string]int{}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod, err := e.pod(context.Background(), rs, fmt.Sprintf("burst-%d", i))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				placed["error: "+err.Error()]++
				return
			}
			m, _ := plan.MatchedOf(pod)
			placed[m.Subset]++
		}()
	}
	wg.Wait()
	if want := map[string]int{"zone-a": 2, "zone-b": 2, "": 2}; fmt.Sprint(placed) != fmt.Sprint(want) {
		t.Errorf("pods per subset %v, want %v", placed, want)
	}
}

// An eviction frees its pod's room at once, as a deletion does.
func TestEvictionFreesRoom(t *testing.T) {
	e := start(t)
	rs := e.replicaSet(t, "evicted", 2)
	e.spread(t, rs, []string{"zone-a", "zone-b"}, []*intstr.IntOrString{maxOf(intstr.FromInt32(1)), nil})
	first, err := e.pod(t.Context(), rs, "evicted-0")
	if err != nil {
		t.Fatal(err)
	}
	e.markReady(t, first)
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: first.Name, Namespace: e.ns}}
	if err := e.c.SubResource("eviction").Create(t.Context(), first, eviction); err != nil {
		t.Fatal(err)
	}
	next, err := e.pod(t.Context(), rs, "evicted-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := subsetOf(t, next); got != "zone-a" {
		t.Errorf("the pod after an eviction went to %q, want the freed zone-a", got)
	}
}

// A pod the webhook placed but the API server then refused leaves an entry that expires after 30 seconds,
// giving its room back, though nothing else happens to the WorkloadSpread meanwhile. The controller's clock
// runs 27 seconds ahead, so the entry expires 3 seconds after the webhook wrote it.
func TestUnseenPodExpires(t *testing.T) {
	e := startAhead(t, plan.CreatingDeadline-3*time.Second)
	rs := e.replicaSet(t, "refused", 1)
	ws := e.spread(t, rs, []string{"zone-a"}, []*intstr.IntOrString{maxOf(intstr.FromInt32(1))})
	rs.Spec.Template.Spec.Containers[0].Name = "Not_A_DNS_Label" // refused by validation, after the webhooks
	if _, err := e.pod(t.Context(), rs, "refused-0"); err == nil {
		t.Fatal("an invalid pod was created")
	}
	got := &kruiseappsv1alpha1.WorkloadSpread{}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(ws), got); err != nil {
		t.Fatal(err)
	}
	if s := got.Status.SubsetStatuses[0]; len(s.CreatingPods) != 1 || s.MissingReplicas != 0 {
		t.Fatalf("the refused pod was not recorded: %+v", s)
	}
	e.waitSubsets(t, ws, map[string][2]int32{"zone-a": {0, 1}})
}

// The validating webhook names the field and the rule it refuses.
func TestValidation(t *testing.T) {
	e := start(t)
	rs := e.replicaSet(t, "checked", 2)
	e.spread(t, rs, []string{"zone-a"}, []*intstr.IntOrString{nil})
	cases := []struct {
		name   string
		change func(ws *kruiseappsv1alpha1.WorkloadSpread)
		want   string
	}{
		{name: "dup", want: "spec.subsets[1].name: Duplicate value", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.TargetReference.Name = "other"
			ws.Spec.Subsets = append(ws.Spec.Subsets, ws.Spec.Subsets[0])
		}},
		{name: "claimed", want: "ReplicaSet checked is spread by WorkloadSpread checked already",
			change: func(*kruiseappsv1alpha1.WorkloadSpread) {}},
		{name: "kind", want: "spec.targetRef: Unsupported value", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.TargetReference.Kind = "DaemonSet"
		}},
	}
	for _, tc := range cases {
		ws := &kruiseappsv1alpha1.WorkloadSpread{}
		if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: "checked"}, ws); err != nil {
			t.Fatal(err)
		}
		ws = &kruiseappsv1alpha1.WorkloadSpread{ObjectMeta: ws.ObjectMeta, Spec: *ws.Spec.DeepCopy()}
		ws.Name, ws.ResourceVersion, ws.UID = tc.name, "", ""
		tc.change(ws)
		err := e.c.Create(t.Context(), ws)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.want)
		}
	}
}

// warnings records the warnings the API server sends a client.
type warnings struct {
	mu   sync.Mutex
	text []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

// A targetFilter, accepted for compatibility but not acted on, draws a warning to the client.
func TestTargetFilterWarns(t *testing.T) {
	e := start(t)
	rs := e.replicaSet(t, "filtered", 2)
	cfg := rest.CopyConfig(clusterConfig)
	got := &warnings{}
	cfg.WarningHandler = got
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ws := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
		"metadata": map[string]any{"name": rs.Name, "namespace": e.ns},
		"spec": map[string]any{
			"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs.Name},
			"targetFilter": map[string]any{"replicasPathList": []any{"spec.replicas"}},
			"subsets":      []any{map[string]any{"name": "a"}},
		},
	}}
	gvr := kruiseappsv1alpha1.GroupVersion.WithResource("workloadspreads")
	if _, err := dyn.Resource(gvr).Namespace(e.ns).Create(t.Context(), ws, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	if len(got.text) != 1 || !strings.Contains(got.text[0], "spec.targetFilter is not supported") {
		t.Errorf("warnings %q", got.text)
	}
}

// update changes the WorkloadSpread's spec and waits for its status of the new generation.
func (e *env) update(t *testing.T, ws *kruiseappsv1alpha1.WorkloadSpread, change func(*kruiseappsv1alpha1.WorkloadSpread)) {
	t.Helper()
	cur := ws.DeepCopy()
	managertest.Update(t, e.c, cur, change)
	e.waitReconciled(t, cur)
}

// waitSubsets waits until each subset reports {replicas, missingReplicas} and no pending entry.
func (e *env) waitSubsets(t *testing.T, ws *kruiseappsv1alpha1.WorkloadSpread, want map[string][2]int32) {
	t.Helper()
	e.eventually(t, fmt.Sprintf("subsets at %v", want), func(ctx context.Context) (bool, error) {
		got := &kruiseappsv1alpha1.WorkloadSpread{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(ws), got); err != nil {
			return false, err
		}
		for _, s := range got.Status.SubsetStatuses {
			if w := want[s.Name]; s.Replicas != w[0] || s.MissingReplicas != w[1] || len(s.CreatingPods)+len(s.DeletingPods) > 0 {
				return false, fmt.Errorf("subset %+v", s)
			}
		}
		return len(got.Status.SubsetStatuses) == len(want), fmt.Errorf("status %+v", got.Status)
	})
}

// waitCosts waits until each pod carries the deletion cost wanted ("" for none).
func (e *env) waitCosts(t *testing.T, want map[string]string) {
	t.Helper()
	e.eventually(t, fmt.Sprintf("deletion costs %v", want), func(ctx context.Context) (bool, error) {
		for name, cost := range want {
			pod := &corev1.Pod{}
			if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, pod); err != nil {
				return false, err
			}
			if got := pod.Annotations[plan.DeletionCostAnnotation]; got != cost {
				return false, fmt.Errorf("pod %s cost %q, want %q", name, got, cost)
			}
		}
		return true, nil
	})
}
