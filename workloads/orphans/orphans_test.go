package orphans

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func workload(ns, name string, sel *metav1.LabelSelector) Workload {
	return Workload{Key: types.NamespacedName{Namespace: ns, Name: name}, Selector: sel}
}

func matchLabels(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func pod(ns string, labels map[string]string, refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: labels, OwnerReferences: refs}}
}

var controllerRef = metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "u1", Controller: ptr.To(true)}

func names(reqs []reconcile.Request) []string {
	out := []string{}
	for _, r := range reqs {
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out
}

func TestAdopters(t *testing.T) {
	web := map[string]string{"app": "web", "tier": "front"}
	cases := []struct {
		name      string
		pod       *corev1.Pod
		workloads []Workload
		want      []string
	}{
		{"an orphan its selector matches", pod("a", web), []Workload{workload("a", "web", matchLabels("app", "web"))}, []string{"a/web"}},
		{"every match, not the others", pod("a", web), []Workload{
			workload("a", "web", matchLabels("app", "web")),
			workload("a", "front", matchLabels("tier", "front")),
			workload("a", "db", matchLabels("app", "db")),
		}, []string{"a/front", "a/web"}},
		{"an orphan its selector does not match", pod("a", web), []Workload{workload("a", "db", matchLabels("app", "db"))}, []string{}},
		{"a selector asking for more labels than the pod has", pod("a", web), []Workload{workload("a", "web", matchLabels("app", "web", "track", "canary"))}, []string{}},
		{"a pod with a controller", pod("a", web, controllerRef), []Workload{workload("a", "web", matchLabels("app", "web"))}, []string{}},
		{"an orphan whose only owner is not its controller", pod("a", web, metav1.OwnerReference{Kind: "Thing", Name: "t", UID: "u2"}),
			[]Workload{workload("a", "web", matchLabels("app", "web"))}, []string{"a/web"}},
		{"a workload of another namespace", pod("a", web), []Workload{workload("b", "web", matchLabels("app", "web"))}, []string{}},
		{"an empty selector", pod("a", web), []Workload{workload("a", "all", &metav1.LabelSelector{})}, []string{}},
		{"no selector", pod("a", web), []Workload{workload("a", "none", nil)}, []string{}},
		{"an invalid selector", pod("a", web), []Workload{workload("a", "bad", &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near", Values: []string{"web"}}},
		})}, []string{}},
		{"a selector by expression", pod("a", web), []Workload{workload("a", "web", &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}},
		})}, []string{"a/web"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(Adopters(tc.pod, tc.workloads)); !slices.Equal(got, tc.want) {
				t.Fatalf("Adopters = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPredicate(t *testing.T) {
	orphan := pod("a", map[string]string{"app": "web"})
	relabelled := pod("a", map[string]string{"app": "api"})
	owned := pod("a", map[string]string{"app": "web"}, controllerRef)
	deleting := orphan.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	status := orphan.DeepCopy()
	status.Status.Phase = corev1.PodRunning

	creates := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"an orphan", orphan, true},
		{"a pod with a controller", owned, false},
		{"an orphan being deleted", deleting, false},
	}
	for _, tc := range creates {
		if got := Predicate.Create(event.CreateEvent{Object: tc.pod}); got != tc.want {
			t.Errorf("create of %s: %v, want %v", tc.name, got, tc.want)
		}
	}
	updates := []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{"an orphan relabelled", orphan, relabelled, true},
		{"a pod released by its controller", owned, orphan, true},
		{"an orphan's status changed", orphan, status, false},
		{"an orphan adopted", orphan, owned, false},
		{"an owned pod relabelled", owned, func() *corev1.Pod { p := owned.DeepCopy(); p.Labels["app"] = "api"; return p }(), false},
		{"a relabelled orphan being deleted", orphan, func() *corev1.Pod { p := deleting.DeepCopy(); p.Labels["app"] = "api"; return p }(), false},
	}
	for _, tc := range updates {
		if got := Predicate.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("update of %s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if Predicate.Delete(event.DeleteEvent{Object: orphan}) || Predicate.Generic(event.GenericEvent{Object: orphan}) {
		t.Error("a delete or generic event passed")
	}
}

func drain(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []string {
	var got []reconcile.Request
	for q.Len() > 0 {
		req, _ := q.Get()
		got = append(got, req)
		q.Done(req)
	}
	return names(got)
}

// The handler lists the pod's namespace only, and enqueues the matches of the pod as it is now.
func TestHandler(t *testing.T) {
	all := []Workload{
		workload("a", "web", matchLabels("app", "web")),
		workload("a", "api", matchLabels("app", "api")),
		workload("b", "web", matchLabels("app", "web")),
	}
	var listed []string
	list := func(_ context.Context, ns string) ([]Workload, error) {
		listed = append(listed, ns)
		return slices.DeleteFunc(slices.Clone(all), func(w Workload) bool { return w.Key.Namespace != ns }), nil
	}
	h := Handler(list)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()

	steps := []struct {
		name string
		send func()
		want []string
	}{
		{"an orphan created", func() { h.Create(t.Context(), event.CreateEvent{Object: pod("a", map[string]string{"app": "web"})}, q) }, []string{"a/web"}},
		{"an orphan relabelled", func() {
			h.Update(t.Context(), event.UpdateEvent{ObjectOld: pod("a", map[string]string{"app": "web"}), ObjectNew: pod("a", map[string]string{"app": "api"})}, q)
		}, []string{"a/api"}},
		{"an owned pod created", func() {
			h.Create(t.Context(), event.CreateEvent{Object: pod("a", map[string]string{"app": "web"}, controllerRef)}, q)
		}, []string{}},
		{"an orphan deleted", func() { h.Delete(t.Context(), event.DeleteEvent{Object: pod("b", map[string]string{"app": "web"})}, q) }, []string{}},
	}
	for _, s := range steps {
		s.send()
		if got := drain(q); !slices.Equal(got, s.want) {
			t.Errorf("%s: enqueued %v, want %v", s.name, got, s.want)
		}
	}
	if want := []string{"a", "a"}; !slices.Equal(listed, want) {
		t.Errorf("listed namespaces %v, want %v", listed, want)
	}
}

// A failed list enqueues nothing: the next event, or the workload's own, tries again.
func TestHandlerListError(t *testing.T) {
	h := Handler(func(context.Context, string) ([]Workload, error) { return nil, errors.New("no cache") })
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h.Create(t.Context(), event.CreateEvent{Object: pod("a", map[string]string{"app": "web"})}, q)
	if q.Len() != 0 {
		t.Errorf("enqueued %d requests after a failed list", q.Len())
	}
}
