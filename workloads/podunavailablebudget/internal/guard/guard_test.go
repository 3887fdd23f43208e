package guard

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/webhooks"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := kruisepolicyv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// budget is PodUnavailableBudget web of maxUnavailable 1 over ten pods, allowing allowed more.
func budget(allowed int32) *kruisepolicyv1alpha1.PodUnavailableBudget {
	one := intstr.FromInt32(1)
	return &kruisepolicyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "pub-uid"},
		Spec: kruisepolicyv1alpha1.PodUnavailableBudgetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: &one},
		Status: kruisepolicyv1alpha1.PodUnavailableBudgetStatus{UnavailableAllowed: allowed, CurrentAvailable: 9 + allowed,
			DesiredAvailable: 9, TotalReplicas: 10},
	}
}

// protectedPod is a ready pod web-0 whose related-pub annotation names budget web.
func protectedPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{kruisepolicyv1alpha1.PodRelatedPubAnnotation: "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:v1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func newImage(p *corev1.Pod) { p.Spec.Containers[0].Image = "web:v2" }

type env struct {
	guard    *Guard
	c        client.Client
	recorder *events.FakeRecorder
}

func newEnv(t *testing.T, pub *kruisepolicyv1alpha1.PodUnavailableBudget, funcs interceptor.Funcs) *env {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(pub).WithStatusSubresource(pub).WithInterceptorFuncs(funcs).Build()
	rec := events.NewFakeRecorder(10)
	g := New(c, c, rec)
	g.Clock = clocktesting.NewFakeClock(now)
	return &env{guard: g, c: c, recorder: rec}
}

func (e *env) stored(t *testing.T) *kruisepolicyv1alpha1.PodUnavailableBudget {
	t.Helper()
	pub := &kruisepolicyv1alpha1.PodUnavailableBudget{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "web"}, pub); err != nil {
		t.Fatal(err)
	}
	return pub
}

// TestValidation is the decision table of the pod validating webhook's budget check: which disruption,
// under which gates, of which pod, with how much budget left, gets which answer, and what the budget then
// records.
func TestValidation(t *testing.T) {
	evict, del, upd := webhooks.PodEvict, webhooks.PodDelete, webhooks.PodUpdate
	cases := []struct {
		name             string
		deletions, upd   bool
		op               webhooks.PodOperation
		pod              *corev1.Pod
		updated          *corev1.Pod
		allowed          int32
		dryRun           bool
		wantCode         int32  // 0: let through
		wantRecord       string // "disrupted", "unavailable" or "" for nothing recorded
		wantMessagePiece string
	}{
		{name: "an eviction within the budget is recorded", deletions: true, op: evict, pod: protectedPod(), allowed: 1, wantRecord: "disrupted"},
		{name: "an eviction beyond the budget is a 429", deletions: true, op: evict, pod: protectedPod(), allowed: 0,
			wantCode: http.StatusTooManyRequests, wantMessagePiece: "Cannot evict pod as it would violate the pod's PodUnavailableBudget web."},
		{name: "a deletion beyond the budget is a 403", deletions: true, op: del, pod: protectedPod(), allowed: 0,
			wantCode: http.StatusForbidden, wantMessagePiece: `pods "web-0" is forbidden: PodUnavailableBudget web: the budget allows no more unavailable pods`},
		{name: "a deletion within the budget is recorded", deletions: true, op: del, pod: protectedPod(), allowed: 2, wantRecord: "disrupted"},
		{name: "a dry run is answered but not recorded", deletions: true, op: evict, pod: protectedPod(), allowed: 1, dryRun: true},
		{name: "a dry run beyond the budget is refused too", deletions: true, op: evict, pod: protectedPod(), allowed: 0, dryRun: true,
			wantCode: http.StatusTooManyRequests},
		{name: "deletions pass without the delete gate", op: evict, pod: protectedPod(), allowed: 0},
		{name: "an image change within the budget is recorded", upd: true, op: upd, pod: protectedPod(), updated: protectedPod(newImage),
			allowed: 1, wantRecord: "unavailable"},
		{name: "an image change beyond the budget is a 403", upd: true, op: upd, pod: protectedPod(), updated: protectedPod(newImage),
			allowed: 0, wantCode: http.StatusForbidden},
		{name: "updates pass without the update gate", deletions: true, op: upd, pod: protectedPod(), updated: protectedPod(newImage)},
		{name: "a metadata update passes", upd: true, op: upd, pod: protectedPod(),
			updated: protectedPod(func(p *corev1.Pod) { p.Labels["team"] = "x" })},
		{name: "labelling a pod unavailable counts", upd: true, op: upd, pod: protectedPod(),
			updated: protectedPod(func(p *corev1.Pod) { p.Labels["unavailable-pod.kruise.io/offline"] = "true" }), wantCode: http.StatusForbidden},
		{name: "a pod without the related-pub annotation passes", deletions: true, op: del, allowed: 0,
			pod: protectedPod(func(p *corev1.Pod) { p.Annotations = nil })},
		{name: "the legacy related-pub annotation counts", deletions: true, op: del, allowed: 0, wantCode: http.StatusForbidden,
			pod: protectedPod(func(p *corev1.Pod) {
				p.Annotations = map[string]string{kruisepolicyv1alpha1.PodRelatedPubAnnotationLegacy: "web"}
			})},
		{name: "a pod naming a budget that does not exist passes", deletions: true, op: del, allowed: 0,
			pod: protectedPod(func(p *corev1.Pod) { p.Annotations[kruisepolicyv1alpha1.PodRelatedPubAnnotation] = "gone" })},
		{name: "a pod not ready passes", deletions: true, op: evict, allowed: 0,
			pod: protectedPod(func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse })},
		{name: "no-protect passes", deletions: true, op: evict, allowed: 0,
			pod: protectedPod(func(p *corev1.Pod) { p.Annotations[kruisepolicyv1alpha1.PodPubNoProtectionAnnotation] = "true" })},
		{name: "a terminating pod passes", deletions: true, op: del, allowed: 0,
			pod: protectedPod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, budget(tc.allowed), interceptor.Funcs{})
			d := webhooks.PodDisruption{Operation: tc.op, Pod: tc.pod, Updated: tc.updated, DryRun: tc.dryRun, UserName: "alice"}
			err := e.guard.Validation(tc.deletions, tc.upd)(context.Background(), d)
			checkAnswer(t, err, tc.wantCode, tc.wantMessagePiece)
			checkRecord(t, e.stored(t), tc.allowed, tc.wantRecord)
			if tc.wantCode != 0 {
				checkEvent(t, e.recorder, "Warning PubPreventPodDeletion")
			}
		})
	}
}

func checkAnswer(t *testing.T, err error, wantCode int32, piece string) {
	t.Helper()
	if wantCode == 0 {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Code != wantCode || !strings.Contains(st.Status().Message, piece) {
		t.Fatalf("answer %v, want code %d with %q", err, wantCode, piece)
	}
}

// checkRecord: the pod recorded where want says and one unavailable pod taken, or the budget untouched.
func checkRecord(t *testing.T, pub *kruisepolicyv1alpha1.PodUnavailableBudget, allowed int32, want string) {
	t.Helper()
	_, disrupted := pub.Status.DisruptedPods["web-0"]
	_, unavailable := pub.Status.UnavailablePods["web-0"]
	got := ""
	switch {
	case disrupted && unavailable:
		got = "both"
	case disrupted:
		got = "disrupted"
	case unavailable:
		got = "unavailable"
	}
	wantAllowed := allowed
	if want != "" {
		wantAllowed--
	}
	if got != want || pub.Status.UnavailableAllowed != wantAllowed {
		t.Errorf("recorded %q with %d allowed, want %q with %d", got, pub.Status.UnavailableAllowed, want, wantAllowed)
	}
}

func checkEvent(t *testing.T, rec *events.FakeRecorder, prefix string) {
	t.Helper()
	select {
	case ev := <-rec.Events:
		if !strings.HasPrefix(ev, prefix) {
			t.Errorf("event %q, want %q", ev, prefix)
		}
	default:
		t.Errorf("no event %q", prefix)
	}
}

// The refusal of an eviction names the budget in a DisruptionBudget cause, as the eviction API's.
func TestEvictionRefusalCause(t *testing.T) {
	e := newEnv(t, budget(0), interceptor.Funcs{})
	err := e.guard.Validation(true, false)(context.Background(), webhooks.PodDisruption{Operation: webhooks.PodEvict, Pod: protectedPod()})
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Reason != metav1.StatusReasonTooManyRequests || st.Status().Details == nil ||
		len(st.Status().Details.Causes) != 1 || st.Status().Details.Causes[0].Type != policyv1.DisruptionBudgetCause {
		t.Fatalf("refusal %#v", err)
	}
}

// A write that loses its race reads the budget again and decides on what it then says.
func TestLostRaceDecidesAgain(t *testing.T) {
	lost := false
	funcs := interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		if !lost {
			lost = true
			// Someone else took the last unavailable pod meanwhile.
			other := budget(0)
			other.Status.DisruptedPods = map[string]metav1.Time{"web-9": metav1.NewTime(now)}
			stored := &kruisepolicyv1alpha1.PodUnavailableBudget{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
				return err
			}
			stored.Status = other.Status
			if err := c.Status().Update(ctx, stored); err != nil {
				return err
			}
			return apierrors.NewConflict(kruisepolicyv1alpha1.Resource("podunavailablebudgets"), "web", errors.New("stale"))
		}
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}}
	e := newEnv(t, budget(1), funcs)
	err := e.guard.Validation(true, false)(context.Background(), webhooks.PodDisruption{Operation: webhooks.PodEvict, Pod: protectedPod()})
	checkAnswer(t, err, http.StatusTooManyRequests, "")
	if pub := e.stored(t); len(pub.Status.DisruptedPods) != 1 || pub.Status.UnavailableAllowed != 0 {
		t.Errorf("status %+v", pub.Status)
	}
}

// A budget that keeps changing under every write is a 504 to retry, never an admission.
func TestEndlessRacesAreATimeout(t *testing.T) {
	funcs := interceptor.Funcs{SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
		return apierrors.NewConflict(kruisepolicyv1alpha1.Resource("podunavailablebudgets"), "web", errors.New("stale"))
	}}
	e := newEnv(t, budget(1), funcs)
	err := e.guard.Validation(true, false)(context.Background(), webhooks.PodDisruption{Operation: webhooks.PodDelete, Pod: protectedPod()})
	checkAnswer(t, err, http.StatusGatewayTimeout, "couldn't record the DELETE of pod web-0")
	if ok, err := e.guard.AllowInPlaceUpdate(context.Background(), protectedPod()); ok || err != nil {
		t.Errorf("in-place update allowed %v, %v", ok, err)
	}
}

func TestUnreadableBudgetIsAnInternalError(t *testing.T) {
	funcs := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return errors.New("cache not synced")
	}}
	e := newEnv(t, budget(1), funcs)
	err := e.guard.Validation(true, false)(context.Background(), webhooks.PodDisruption{Operation: webhooks.PodEvict, Pod: protectedPod()})
	checkAnswer(t, err, http.StatusInternalServerError, "cache not synced")
	if ok, err := e.guard.AllowInPlaceUpdate(context.Background(), protectedPod()); ok || err == nil {
		t.Errorf("in-place update allowed %v, %v", ok, err)
	}
}

func TestAllowInPlaceUpdate(t *testing.T) {
	e := newEnv(t, budget(1), interceptor.Funcs{})
	if ok, err := e.guard.AllowInPlaceUpdate(context.Background(), protectedPod()); !ok || err != nil {
		t.Fatalf("first update: %v, %v", ok, err)
	}
	checkRecord(t, e.stored(t), 1, "unavailable")
	// The same pod asked again (the controller's next reconcile) costs nothing more.
	if ok, err := e.guard.AllowInPlaceUpdate(context.Background(), protectedPod()); !ok || err != nil {
		t.Fatalf("the same pod again: %v, %v", ok, err)
	}
	other := protectedPod(func(p *corev1.Pod) { p.Name = "web-1" })
	if ok, err := e.guard.AllowInPlaceUpdate(context.Background(), other); ok || err != nil {
		t.Fatalf("a second pod: %v, %v", ok, err)
	}
	checkEvent(t, e.recorder, "Warning PubPreventPodDeletion")
}

// The guard decides on the status it wrote last when the cache does not show it yet.
func TestNewestOfCacheAndWritten(t *testing.T) {
	g := &Guard{}
	cached := budget(1)
	cached.ResourceVersion = "7"
	written := budget(0)
	written.ResourceVersion = "8"
	g.remember(written)
	if got := g.newest(cached); got.Status.UnavailableAllowed != 0 {
		t.Error("the cache's older copy was used")
	}
	cached.ResourceVersion = "9"
	if got := g.newest(cached); got.Status.UnavailableAllowed != 1 {
		t.Error("the cache's newer copy was not used")
	}
	recreated := budget(1)
	recreated.UID, recreated.ResourceVersion = "other", "2"
	if got := g.newest(recreated); got.UID != "other" {
		t.Error("the copy of a deleted budget of the same name was used")
	}
	g.forget(client.ObjectKeyFromObject(cached))
	cached.ResourceVersion = "1"
	if got := g.newest(cached); got.ResourceVersion != "1" {
		t.Error("a forgotten copy was used")
	}
}

// The disruptions are counted by operation and result on the manager's registry.
func TestDisruptionsAreCounted(t *testing.T) {
	count := func(op, result string) float64 {
		return managertest.Counter(t, DisruptionsName, map[string]string{"operation": op, "result": result})
	}
	admitted, refused, exempted := count("EVICT", "admitted"), count("EVICT", "refused"), count("DELETE", "exempt")
	e := newEnv(t, budget(1), interceptor.Funcs{})
	validate := e.guard.Validation(true, false)
	_ = validate(context.Background(), webhooks.PodDisruption{Operation: webhooks.PodEvict, Pod: protectedPod()})
	_ = validate(context.Background(), webhooks.PodDisruption{Operation: webhooks.PodEvict,
		Pod: protectedPod(func(p *corev1.Pod) { p.Name = "web-1" })})
	_ = validate(context.Background(), webhooks.PodDisruption{Operation: webhooks.PodDelete,
		Pod: protectedPod(func(p *corev1.Pod) { p.Annotations = nil })})
	if count("EVICT", "admitted") != admitted+1 || count("EVICT", "refused") != refused+1 || count("DELETE", "exempt") != exempted+1 {
		t.Errorf("admitted %v (was %v), refused %v (was %v), exempt %v (was %v)", count("EVICT", "admitted"), admitted,
			count("EVICT", "refused"), refused, count("DELETE", "exempt"), exempted)
	}
}
