package crrmanager

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

var created = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

// newCRR is request r for container app of pod p (UID pod-uid) on node n1, created at created, as the
// webhook leaves it.
func newCRR(changes ...crrChange) *kruiseappsv1alpha1.ContainerRecreateRequest {
	crr := &kruiseappsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Name: "r", Namespace: "ns", CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{
				kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey:   "pod-uid",
				kruiseappsv1alpha1.ContainerRecreateRequestNodeNameKey: "n1",
				kruiseappsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
			},
		},
		Spec: kruiseappsv1alpha1.ContainerRecreateRequestSpec{
			PodName:    "p",
			Containers: []kruiseappsv1alpha1.ContainerRecreateRequestContainer{{Name: "app"}},
			Strategy:   &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyFail},
		},
	}
	for _, c := range changes {
		c(crr)
	}
	return crr
}

// newPod is pod p whose container app runs since before the request was created.
func newPod(changes ...func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid"},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			running("app", "containerd://old", 0, created.Add(-time.Hour), true),
		}},
	}
	for _, c := range changes {
		c(pod)
	}
	return pod
}

func running(name, id string, restarts int32, started time.Time, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, ContainerID: id, RestartCount: restarts, Ready: ready,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}},
	}
}

func phase(p kruiseappsv1alpha1.ContainerRecreateRequestPhase) crrChange {
	return func(c *kruiseappsv1alpha1.ContainerRecreateRequest) { c.Status.Phase = p }
}

func recreating(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
	phase(kruiseappsv1alpha1.ContainerRecreateRequestRecreating)(c)
}

func completedAt(at time.Time) crrChange {
	return func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
		c.Status.Phase = kruiseappsv1alpha1.ContainerRecreateRequestCompleted
		c.Status.CompletionTime = ptr.To(metav1.NewTime(at))
	}
}

func annotated(key, value string) crrChange {
	return func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[key] = value
	}
}

func unreadyGrace(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
	c.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
}

func withFinalizer(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
	c.Finalizers = append(c.Finalizers, kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey)
}

func deadline(seconds int64) crrChange {
	return func(c *kruiseappsv1alpha1.ContainerRecreateRequest) { c.Spec.ActiveDeadlineSeconds = ptr.To(seconds) }
}

func ttl(seconds int32) crrChange {
	return func(c *kruiseappsv1alpha1.ContainerRecreateRequest) { c.Spec.TTLSecondsAfterFinished = ptr.To(seconds) }
}

func gated(pod *corev1.Pod) { podreadiness.AddGate(pod) }

// held is a gated pod the request holds not ready.
func held(pod *corev1.Pod) {
	gated(pod)
	podreadiness.AddNotReady(pod, NotReadyUserAgent, "ns/r", metav1.NewTime(created))
}

const emptySync = "[]"

func TestDecide(t *testing.T) {
	syncedApp := `[{"name":"app","ready":false,"restartCount":1,"containerID":"containerd://new"}]`
	restarted := func(pod *corev1.Pod) {
		pod.Status.ContainerStatuses[0] = running("app", "containerd://new", 1, created.Add(10*time.Second), false)
	}
	now := created.Add(20 * time.Second)
	cases := []struct {
		name string
		crr  *kruiseappsv1alpha1.ContainerRecreateRequest
		pod  *corev1.Pod
		now  time.Time
		want Plan
	}{
		{name: "new, waiting for the agent", crr: newCRR(), pod: newPod(), now: now,
			want: Plan{RequeueAfter: 40 * time.Second}},
		{name: "agent silent 1 min", crr: newCRR(), pod: newPod(), now: created.Add(time.Minute),
			want: Plan{Complete: &Completion{Reason: ReasonNoNodeAgent,
				Message: `no node agent answered within 1m0s: is the node agent running on node "n1"?`}}},
		{name: "pending is an answer", crr: newCRR(phase(kruiseappsv1alpha1.ContainerRecreateRequestPending)), pod: newPod(),
			now: created.Add(time.Hour), want: Plan{}},
		{name: "deadline ahead", crr: newCRR(recreating, deadline(30), annotated(syncKey, emptySync)), pod: newPod(), now: now,
			want: Plan{RequeueAfter: 10 * time.Second}},
		{name: "deadline earlier than the response timeout", crr: newCRR(deadline(30)), pod: newPod(), now: now,
			want: Plan{RequeueAfter: 10 * time.Second}},
		{name: "deadline passed", crr: newCRR(recreating, deadline(20)), pod: newPod(), now: now,
			want: Plan{Complete: &Completion{Reason: ReasonDeadlineExceeded,
				Message: "recreating has exceeded the activeDeadlineSeconds (20s)", FailUnfinished: true}}},
		{name: "pod gone", crr: newCRR(recreating), pod: nil, now: now,
			want: Plan{Complete: &Completion{Reason: ReasonPodGone, Message: `pod "p" has gone`}}},
		{name: "pod deleting", crr: newCRR(recreating), pod: newPod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }), now: now,
			want: Plan{Complete: &Completion{Reason: ReasonPodGone, Message: `pod "p" is being deleted`}}},
		{name: "UID changed", crr: newCRR(recreating), pod: newPod(func(p *corev1.Pod) { p.UID = "other" }), now: now,
			want: Plan{Complete: &Completion{Reason: ReasonPodGone,
				Message: `pod "p" has gone: the pod of that name now has UID other, not "pod-uid"`}}},
		{name: "pod gone before the agent answered", crr: newCRR(), pod: nil, now: created.Add(time.Hour),
			want: Plan{Complete: &Completion{Reason: ReasonPodGone, Message: `pod "p" has gone`}}},
		{name: "recreating: first sync, old container left out", crr: newCRR(recreating), pod: newPod(), now: now,
			want: Plan{SyncStatuses: ptr.To(emptySync)}},
		{name: "recreating: new container synced", crr: newCRR(recreating, annotated(syncKey, emptySync)), pod: newPod(restarted), now: now,
			want: Plan{SyncStatuses: ptr.To(syncedApp)}},
		{name: "recreating: in sync", crr: newCRR(recreating, annotated(syncKey, syncedApp)), pod: newPod(restarted), now: now,
			want: Plan{}},
		{name: "recreating: stopped container left out", crr: newCRR(recreating, annotated(syncKey, syncedApp)),
			pod: newPod(func(p *corev1.Pod) { p.Status.ContainerStatuses[0].State = corev1.ContainerState{} }), now: now,
			want: Plan{SyncStatuses: ptr.To(emptySync)}},
		{name: "unready acquire", crr: newCRR(recreating, unreadyGrace, annotated(syncKey, emptySync)), pod: newPod(gated), now: now,
			want: Plan{AddFinalizer: true, Hold: true, AcquiredAt: "2030-01-01T12:00:20Z"}},
		{name: "unready acquire retried after the finalizer", crr: newCRR(recreating, unreadyGrace, withFinalizer, annotated(syncKey, emptySync)),
			pod: newPod(gated), now: now, want: Plan{Hold: true, AcquiredAt: "2030-01-01T12:00:20Z"}},
		{name: "unready acquire without the gate", crr: newCRR(recreating, unreadyGrace, annotated(syncKey, emptySync)), pod: newPod(), now: now,
			want: Plan{AcquiredAt: "2030-01-01T12:00:20Z"}},
		{name: "unready acquired", crr: newCRR(recreating, unreadyGrace, withFinalizer, annotated(syncKey, emptySync), annotated(acquiredKey, "t")),
			pod: newPod(held), now: now, want: Plan{}},
		{name: "unready waits for recreating", crr: newCRR(phase(kruiseappsv1alpha1.ContainerRecreateRequestPending), unreadyGrace),
			pod: newPod(gated), now: now, want: Plan{}},
		{name: "completed: release and drop the active label", crr: newCRR(completedAt(now), unreadyGrace, withFinalizer, annotated(acquiredKey, "t")),
			pod: newPod(held), now: now, want: Plan{Release: true, RemoveFinalizer: true, RemoveActive: true}},
		{name: "completed: pod deleting, nothing to release", crr: newCRR(completedAt(now), withFinalizer),
			pod: newPod(held, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }), now: now,
			want: Plan{RemoveFinalizer: true, RemoveActive: true}},
		{name: "completed without completionTime", crr: newCRR(phase(kruiseappsv1alpha1.ContainerRecreateRequestCompleted), ttl(0)),
			pod: newPod(), now: now, want: Plan{RemoveActive: true}},
		{name: "completed: TTL ahead", crr: newCRR(completedAt(now.Add(-5*time.Second)), ttl(30)), pod: newPod(), now: now,
			want: Plan{RemoveActive: true, RequeueAfter: 25 * time.Second}},
		{name: "completed: TTL passed", crr: newCRR(completedAt(now.Add(-30*time.Second)), ttl(30)), pod: nil, now: now,
			want: Plan{Delete: true}},
		{name: "completed: TTL passed, still held", crr: newCRR(completedAt(now.Add(-time.Minute)), ttl(1), withFinalizer),
			pod: newPod(held), now: now, want: Plan{Release: true, RemoveFinalizer: true, Delete: true}},
		{name: "completed: no TTL, done", crr: newCRR(completedAt(now), func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
			delete(c.Labels, kruiseappsv1alpha1.ContainerRecreateRequestActiveKey)
		}), pod: newPod(), now: now, want: Plan{}},
		{name: "deleted while held", crr: newCRR(recreating, unreadyGrace, withFinalizer, func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
			c.DeletionTimestamp = ptr.To(metav1.NewTime(now))
		}), pod: newPod(held), now: now, want: Plan{Release: true, RemoveFinalizer: true}},
		{name: "held by someone else only", crr: newCRR(completedAt(now), withFinalizer, func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
			c.Name = "other"
		}), pod: newPod(held), now: now, want: Plan{RemoveFinalizer: true, RemoveActive: true}},
		{name: "nil request", now: now, want: Plan{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.crr, tc.pod, tc.now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

const (
	syncKey     = kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey
	acquiredKey = kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey
)

func TestSyncStatuses(t *testing.T) {
	crr := newCRR(func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
		c.Spec.Containers = []kruiseappsv1alpha1.ContainerRecreateRequestContainer{{Name: "app"}, {Name: "log"}, {Name: "gone"}, {Name: "new"}}
	})
	pod := newPod(func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{
			running("app", "containerd://a2", 4, created.Add(time.Second), true),
			running("log", "containerd://l1", 0, created.Add(-time.Second), true), // started before the request
			{Name: "new", ContainerID: "containerd://n2", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}},
			running("other", "containerd://o1", 0, created.Add(time.Second), true), // not in the request
			running("started-with-request", "x", 0, created, true),
		}
	})
	want := `[{"name":"app","ready":true,"restartCount":4,"containerID":"containerd://a2"}]`
	if got := SyncStatuses(crr, pod); got != want {
		t.Errorf("annotation\n got %s\nwant %s", got, want)
	}
	if got := SyncStatuses(crr, nil); got != emptySync {
		t.Errorf("annotation without a pod %s, want %s", got, emptySync)
	}
	// A container started in the second the request was created counts as new: timestamps have seconds only.
	same := newCRR(func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
		c.Spec.Containers = []kruiseappsv1alpha1.ContainerRecreateRequestContainer{{Name: "started-with-request"}}
	})
	if got := SyncStatuses(same, pod); got != `[{"name":"started-with-request","ready":true,"restartCount":0,"containerID":"x"}]` {
		t.Errorf("container started with the request: %s", got)
	}
}

func TestHolderKeyAndFinished(t *testing.T) {
	if got := HolderKey(newCRR()); got != "ns/r" {
		t.Errorf("holder key %q", got)
	}
	pod := newPod(held)
	if c := podreadiness.Condition(pod); c == nil || c.Message != `[{"userAgent":"ContainerRecreateRequest","key":"ns/r"}]` ||
		c.Type != pub.KruisePodReadyConditionType {
		t.Errorf("holder condition %+v", c)
	}
	for p, want := range map[kruiseappsv1alpha1.ContainerRecreateRequestPhase]bool{
		"": false, kruiseappsv1alpha1.ContainerRecreateRequestPending: false, kruiseappsv1alpha1.ContainerRecreateRequestRecreating: false,
		kruiseappsv1alpha1.ContainerRecreateRequestCompleted: true, kruiseappsv1alpha1.ContainerRecreateRequestFailed: true,
	} {
		if got := Finished(newCRR(phase(p))); got != want {
			t.Errorf("Finished with phase %q = %v", p, got)
		}
	}
}
