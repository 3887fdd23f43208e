package batchrelease

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

// A deleted BatchRelease that has released its workload lets its finalizer go without a last status write, and
// a reconcile that still reads it with the finalizer (a cache behind) does not try again.
func TestReleasedBatchReleaseGoesWithoutAStatusWrite(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := rolloutsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	br := &rolloutsv1beta1.BatchRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u",
		Finalizers: []string{rolloutsv1beta1.BatchReleaseFinalizer}, DeletionTimestamp: &now}}
	br.Status.Phase = rolloutsv1beta1.RolloutPhaseProgressing
	c, read, statusWrites := countedStatusWrites(t, scheme, br)
	stale := read.DeepCopy()
	r := &Reconciler{Client: c, Clock: clock.RealClock{}, Recorder: events.NewFakeRecorder(10)}
	d := &plan.BatchDecision{Status: plan.Completed(read.Status)}
	if err := r.apply(context.Background(), read, nil, d); err != nil {
		t.Fatal(err)
	}
	err := c.Get(context.Background(), client.ObjectKeyFromObject(br), &rolloutsv1beta1.BatchRelease{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("BatchRelease still there after its finalizer went: %v", err)
	}
	if *statusWrites != 0 {
		t.Errorf("%d status writes to a BatchRelease on its way out", *statusWrites)
	}
	if !r.written.Stale(stale) {
		t.Error("the version the finalizer removal replaced is not recorded: a cache behind would remove it again")
	}
}

// countedStatusWrites is a fake client holding br that counts its status writes, and br as read from it.
func countedStatusWrites(t *testing.T, scheme *runtime.Scheme, br *rolloutsv1beta1.BatchRelease) (client.Client, *rolloutsv1beta1.BatchRelease, *int) {
	t.Helper()
	writes := new(int)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(br).WithStatusSubresource(br).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string,
			obj client.Object, opts ...client.SubResourceUpdateOption) error {
			*writes++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	read := &rolloutsv1beta1.BatchRelease{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(br), read); err != nil {
		t.Fatal(err)
	}
	return c, read, writes
}

// unobservedControl is a workload whose controller never observes the release's writes: Finalize always
// waits, until observed is set.
type unobservedControl struct {
	control.WorkloadControl
	observed bool
}

func (u *unobservedControl) Finalize(context.Context) (bool, error) {
	if !u.observed {
		return false, fmt.Errorf("deployment ns/web: waiting: %w", control.ErrNotObserved)
	}
	return true, nil
}

// A release that waits for its workload's controller says nothing for NotObservedPatience, then reports the
// wait once, as a Warning event and a Stalled condition, and clears the condition when the wait ends.
func TestWaitingForTheWorkloadsControllerStallsAfterPatience(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := rolloutsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	br := &rolloutsv1beta1.BatchRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u"}}
	br.Status.Phase = rolloutsv1beta1.RolloutPhaseProgressing
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(br).WithStatusSubresource(br).Build()
	start := time.Now()
	clk := clocktesting.NewFakePassiveClock(start)
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: c, Clock: clk, Recorder: rec}
	ctl := &unobservedControl{}
	finalize := func() *rolloutsv1beta1.BatchRelease {
		t.Helper()
		read := &rolloutsv1beta1.BatchRelease{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(br), read); err != nil {
			t.Fatal(err)
		}
		d := &plan.BatchDecision{Action: plan.ActionFinalize, Status: read.Status}
		if err := r.apply(t.Context(), read, ctl, d); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(br), read); err != nil {
			t.Fatal(err)
		}
		return read
	}
	for _, after := range []time.Duration{0, NotObservedPatience / 2, NotObservedPatience - time.Second} {
		clk.SetTime(start.Add(after))
		if got := finalize(); stalledFor(got, ReasonWorkloadNotObserved) || len(rec.Events) != 0 {
			t.Fatalf("reported a wait before its patience ran out: %+v, %d events", got.Status.Conditions, len(rec.Events))
		}
	}
	clk.SetTime(start.Add(NotObservedPatience + time.Second))
	got := finalize()
	if !stalledFor(got, ReasonWorkloadNotObserved) {
		t.Fatalf("no Stalled condition after %s: %+v", NotObservedPatience, got.Status.Conditions)
	}
	if ev := <-rec.Events; !strings.Contains(ev, ReasonWorkloadNotObserved) || !strings.Contains(ev, "deployment ns/web") {
		t.Errorf("event %q does not name the reason and the workload", ev)
	}
	finalize()
	if len(rec.Events) != 0 {
		t.Errorf("the wait was reported again: %q", <-rec.Events)
	}
	ctl.observed = true
	if got := finalize(); plan.GetCondition(got.Status.Conditions, plan.ConditionStalled) != nil {
		t.Errorf("Stalled stays after the wait ended: %+v", got.Status.Conditions)
	}
}

// rollingOutControl is a workload still rolling out when its release lets go: Finalize waits, without error.
type rollingOutControl struct{ control.WorkloadControl }

func (rollingOutControl) Finalize(context.Context) (bool, error) { return false, nil }

// A BatchRelease its Rollout created leaves the Normal events to its Rollout, and once given its finalizing plan
// or deleted writes no progress (its Rollout only waits for it to go), but still clears a Stalled condition;
// one created by hand reports both.
func TestABatchReleaseOfARolloutLeavesProgressToItsRollout(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := rolloutsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	ro := metav1.OwnerReference{APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: "Rollout", Name: "web", UID: "r",
		Controller: ptr.To(true)}
	stalled := []rolloutsv1beta1.RolloutCondition{{Type: plan.ConditionStalled, Status: "True", Reason: ReasonWorkloadNotObserved}}
	for _, tc := range []struct {
		name                               string
		owned, finalizing, deleting, stall bool
		wantEvent, wantWrite               bool
	}{
		{name: "by hand, releasing", wantEvent: true, wantWrite: true},
		{name: "by hand, finalizing", finalizing: true, wantEvent: true, wantWrite: true},
		{name: "by hand, on its way out", deleting: true, wantEvent: true, wantWrite: true},
		{name: "of a Rollout, releasing", owned: true, wantWrite: true},
		{name: "of a Rollout, given its finalizing plan", owned: true, finalizing: true},
		{name: "of a Rollout, on its way out", owned: true, deleting: true},
		{name: "of a Rollout, on its way out, Stalled", owned: true, deleting: true, stall: true, wantWrite: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := &rolloutsv1beta1.BatchRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u",
				Finalizers: []string{rolloutsv1beta1.BatchReleaseFinalizer}}}
			if tc.owned {
				br.OwnerReferences = []metav1.OwnerReference{ro}
			}
			if tc.deleting {
				br.DeletionTimestamp = &now
			}
			if !tc.finalizing {
				br.Spec.ReleasePlan.BatchPartition = ptr.To[int32](0)
			}
			br.Status.Phase = rolloutsv1beta1.RolloutPhaseProgressing
			if tc.stall {
				br.Status.Conditions = stalled
			}
			c, read, writes := countedStatusWrites(t, scheme, br)
			rec := events.NewFakeRecorder(10)
			r := &Reconciler{Client: c, Clock: clock.RealClock{}, Recorder: rec}
			st := read.Status.DeepCopy()
			st.Phase = rolloutsv1beta1.RolloutPhaseFinalizing
			d := &plan.BatchDecision{Action: plan.ActionFinalize, Status: *st, Event: "finalizing: releasing the workload"}
			if err := r.apply(t.Context(), read, rollingOutControl{}, d); err != nil {
				t.Fatal(err)
			}
			if got := len(rec.Events) > 0; got != tc.wantEvent {
				t.Errorf("Normal event recorded: %v, want %v", got, tc.wantEvent)
			}
			if got := *writes > 0; got != tc.wantWrite {
				t.Fatalf("status written: %v, want %v", got, tc.wantWrite)
			}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(br), read); err != nil {
				t.Fatal(err)
			}
			if tc.wantWrite && (read.Status.Phase != rolloutsv1beta1.RolloutPhaseFinalizing ||
				plan.GetCondition(read.Status.Conditions, plan.ConditionStalled) != nil) {
				t.Errorf("status written as %s with conditions %+v, want Finalizing without Stalled", read.Status.Phase, read.Status.Conditions)
			}
		})
	}
}

// finalizeCounter is a workload handed back at the first Finalize, whose cache never shows it: each Finalize
// is counted, and each would send its patch again.
type finalizeCounter struct {
	control.WorkloadControl
	finalized int
}

func (f *finalizeCounter) Read(context.Context) (*control.WorkloadInfo, error) {
	return &control.WorkloadInfo{Replicas: 10, UpdatedReplicas: 10, UpdatedReadyReplicas: 10, Consistent: true}, nil
}

func (f *finalizeCounter) Finalize(context.Context) (bool, error) {
	f.finalized++
	return true, nil
}

// A Rollout's BatchRelease given its finalizing plan hands its workload back without writing Completed; its
// deletion then lets it go without finalizing the workload a second time.
func TestALeavingBatchReleaseFinalizesOnce(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := rolloutsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	br := &rolloutsv1beta1.BatchRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u",
		Finalizers: []string{rolloutsv1beta1.BatchReleaseFinalizer},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: "Rollout",
			Name: "web", UID: "r", Controller: ptr.To(true)}}}}
	br.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	br.Status.Phase = rolloutsv1beta1.RolloutPhaseProgressing
	c, _, writes := countedStatusWrites(t, scheme, br)
	wl := &finalizeCounter{}
	controls := control.NewRegistry()
	controls.RegisterFallback(func(client.Client, control.Target) control.WorkloadControl { return wl })
	r := &Reconciler{Client: c, Controls: controls, Clock: clock.RealClock{}, Recorder: events.NewFakeRecorder(10)}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(br)}
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(t.Context(), br); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if wl.finalized != 1 || *writes != 0 {
		t.Errorf("workload finalized %d times with %d status writes, want once and none", wl.finalized, *writes)
	}
	if err := c.Get(t.Context(), req.NamespacedName, &rolloutsv1beta1.BatchRelease{}); !apierrors.IsNotFound(err) {
		t.Errorf("BatchRelease still there after its deletion: %v", err)
	}
}

// A release waiting for its workload's controller looks again soon at first, then less often the longer it waits.
func TestObservedRetryBacksOff(t *testing.T) {
	for _, tc := range []struct{ waited, want time.Duration }{
		{0, notObservedRetry},
		{time.Second, 250 * time.Millisecond},
		{8 * time.Second, 2 * time.Second},
		{NotObservedPatience, notObservedRetryMax},
		{time.Hour, notObservedRetryMax},
	} {
		if got := observedRetry(tc.waited); got != tc.want {
			t.Errorf("after waiting %v: retry in %v, want %v", tc.waited, got, tc.want)
		}
	}
}
