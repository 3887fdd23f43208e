package crrmanager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/crrmanager"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// cfg is nil when the tests run with -short: no control plane, pure tests only.
var cfg *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 30 * time.Second

func TestMain(m *testing.M) {
	// No kubelet runs: the tests write the pods' status themselves, as a kubelet would.
	os.Exit(managertest.Main(m, cluster.Options{}, &cfg))
}

func TestSyncAnnotationFollowsThePod(t *testing.T) {
	c := startController(t)
	ns := managertest.NamespaceWithServiceAccount(t, c, "crr")
	pod := createPod(t, c, ns, false)
	crr := createCRR(t, c, pod, nil)
	startRecreating(t, c, crr)
	// The container running since before the request is not a recreated one.
	eventually(t, "the empty sync annotation", syncAnnotationIs(c, crr, "[]"))

	setContainer(t, c, pod, running("containerd://c2", 1, false))
	eventually(t, "the new container, not ready", syncAnnotationIs(c, crr,
		`[{"name":"app","ready":false,"restartCount":1,"containerID":"containerd://c2"}]`))
	setContainer(t, c, pod, running("containerd://c2", 1, true))
	eventually(t, "the new container, ready", syncAnnotationIs(c, crr,
		`[{"name":"app","ready":true,"restartCount":1,"containerID":"containerd://c2"}]`))
}

func TestUnreadyGraceHoldsAndReleasesThePod(t *testing.T) {
	c := startController(t)
	ns := managertest.NamespaceWithServiceAccount(t, c, "crr")
	pod := createPod(t, c, ns, true)
	graced := func(crr *kruiseappsv1alpha1.ContainerRecreateRequest) {
		crr.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](1)
	}
	first := createCRR(t, c, pod, graced)
	startRecreating(t, c, first)
	eventually(t, "the pod held by the request", podHolders(c, pod, ns+"/"+first.Name))
	eventually(t, "the finalizer and the acquired time", func(ctx context.Context) (bool, string) {
		got := get(t, c, first)
		acquired, err := time.Parse(time.RFC3339, got.Annotations[kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey])
		return crrmanager.HasFinalizer(got) && err == nil && !acquired.IsZero(), fmt.Sprintf("%+v", got.ObjectMeta)
	})

	complete(t, c, first)
	eventually(t, "the pod released", podHolders(c, pod))
	eventually(t, "the finalizer and the active label gone", func(ctx context.Context) (bool, string) {
		got := get(t, c, first)
		_, active := got.Labels[kruiseappsv1alpha1.ContainerRecreateRequestActiveKey]
		return !crrmanager.HasFinalizer(got) && !active, fmt.Sprintf("%+v", got.ObjectMeta)
	})

	// A request deleted while it holds the pod releases it before it goes.
	second := createCRR(t, c, pod, graced)
	startRecreating(t, c, second)
	eventually(t, "the pod held by the second request", podHolders(c, pod, ns+"/"+second.Name))
	if err := c.Delete(t.Context(), second); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod released by the deleted request", podHolders(c, pod))
	eventually(t, "the deleted request gone", gone(c, second))
}

func TestRequestOfADeletedPodCompletes(t *testing.T) {
	c := startController(t)
	ns := managertest.NamespaceWithServiceAccount(t, c, "crr")
	pod := createPod(t, c, ns, false)
	crr := createCRR(t, c, pod, nil)
	startRecreating(t, c, crr)
	if err := c.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the request completed, no longer active", func(ctx context.Context) (bool, string) {
		got := get(t, c, crr)
		_, active := got.Labels[kruiseappsv1alpha1.ContainerRecreateRequestActiveKey]
		return got.Status.Phase == kruiseappsv1alpha1.ContainerRecreateRequestCompleted && got.Status.CompletionTime != nil &&
			podGoneMessage(got.Status.Message) && !active, fmt.Sprintf("%+v %v", got.Status, got.Labels)
	})
	eventually(t, "a PodGone event", func(ctx context.Context) (bool, string) {
		events := &eventsv1.EventList{}
		if err := c.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.Reason == crrmanager.ReasonPodGone && e.Regarding.Name == crr.Name && e.Type == corev1.EventTypeWarning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(events.Items))
	})
}

// podGoneMessage tells whether msg reports the pod gone. The pod deleted with no grace period may still be seen
// with its deletion timestamp before it disappears from the cache, so either wording is right.
func podGoneMessage(msg string) bool {
	return strings.Contains(msg, "has gone") || strings.Contains(msg, "is being deleted")
}

func TestDeadlineCompletesAndFailsTheUnfinishedContainers(t *testing.T) {
	c := startController(t)
	ns := managertest.NamespaceWithServiceAccount(t, c, "crr")
	pod := createPod(t, c, ns, false)
	crr := createCRR(t, c, pod, nil)
	updateStatus(t, c, crr, func(s *kruiseappsv1alpha1.ContainerRecreateRequestStatus) {
		s.Phase = kruiseappsv1alpha1.ContainerRecreateRequestRecreating
		s.ContainerRecreateStates = []kruiseappsv1alpha1.ContainerRecreateRequestContainerRecreateState{
			{Name: "app", Phase: kruiseappsv1alpha1.ContainerRecreateRequestRecreating, IsKilled: true},
		}
	})
	// The deadline counts from the creation timestamp, which has whole seconds: given at creation it may fall
	// due before the status above is written, and the controller would complete the request first (with no
	// container to fail), the status write then putting Recreating over that completion. So it comes only now.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(crr), crr); err != nil {
			return err
		}
		crr.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
		return c.Update(t.Context(), crr)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the request completed at its deadline", func(ctx context.Context) (bool, string) {
		got := get(t, c, crr)
		states := got.Status.ContainerRecreateStates
		return got.Status.Phase == kruiseappsv1alpha1.ContainerRecreateRequestCompleted && len(states) == 1 &&
			states[0].Phase == kruiseappsv1alpha1.ContainerRecreateRequestFailed && states[0].IsKilled, fmt.Sprintf("%+v", got.Status)
	})
}

func TestTTLDeletesAFinishedRequest(t *testing.T) {
	c := startController(t)
	ns := managertest.NamespaceWithServiceAccount(t, c, "crr")
	pod := createPod(t, c, ns, false)
	kept := createCRR(t, c, pod, nil)
	short := createCRR(t, c, pod, func(crr *kruiseappsv1alpha1.ContainerRecreateRequest) {
		crr.Spec.TTLSecondsAfterFinished = ptr.To[int32](1)
	})
	complete(t, c, kept)
	complete(t, c, short)
	eventually(t, "the request with a TTL deleted", gone(c, short))
	eventually(t, "the request without a TTL kept, no longer active", func(ctx context.Context) (bool, string) {
		got := get(t, c, kept)
		_, active := got.Labels[kruiseappsv1alpha1.ContainerRecreateRequestActiveKey]
		return !active, fmt.Sprintf("%v", got.Labels)
	})
}

// startController runs the controller in-process until the test ends and returns a direct client.
func startController(t *testing.T) client.Client {
	t.Helper()
	managertest.RequireCluster(t, cfg)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
	managertest.Start(t, cfg, scheme, func(mgr ctrl.Manager) error {
		return (&crrmanager.Reconciler{}).SetupWithManager(context.Background(), mgr)
	})
	return managertest.DirectClient(t, cfg, scheme)
}

// createPod creates pod p on node n1 whose container app runs since an hour ago; gated pods carry the
// KruisePodReady gate and condition, True.
func createPod(t *testing.T, c client.Client, ns string, gated bool) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName: "n1", AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "app", Image: "example.com/app:v1"}},
		},
	}
	if gated {
		podreadiness.AddGate(pod)
	}
	if err := c.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{
		Phase:             corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{running("containerd://c1", 0, true)},
	}
	pod.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(time.Now().Add(-time.Hour))
	if gated {
		podreadiness.InitCondition(pod, metav1.Now())
	}
	if err := c.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

func running(id string, restarts int32, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: "app", Image: "example.com/app:v1", ImageID: "example.com/app@sha256:1", ContainerID: id,
		RestartCount: restarts, Ready: ready,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
	}
}

// setContainer reports a new state of container app, as the kubelet would.
func setContainer(t *testing.T, c client.Client, pod *corev1.Pod, st corev1.ContainerStatus) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{st}
		return c.Status().Update(t.Context(), pod)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// createCRR creates a request for container app of pod, filled as the webhook fills it.
func createCRR(t *testing.T, c client.Client, pod *corev1.Pod, change func(*kruiseappsv1alpha1.ContainerRecreateRequest)) *kruiseappsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	crr := &kruiseappsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "r-", Namespace: pod.Namespace,
			Labels: map[string]string{
				kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey:   string(pod.UID),
				kruiseappsv1alpha1.ContainerRecreateRequestNodeNameKey: pod.Spec.NodeName,
				kruiseappsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
			},
		},
		Spec: kruiseappsv1alpha1.ContainerRecreateRequestSpec{
			PodName: pod.Name,
			Containers: []kruiseappsv1alpha1.ContainerRecreateRequestContainer{{
				Name:          "app",
				StatusContext: &kruiseappsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://c1"},
			}},
			Strategy: &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyFail},
		},
	}
	if change != nil {
		change(crr)
	}
	if err := c.Create(t.Context(), crr); err != nil {
		t.Fatal(err)
	}
	return crr
}

// updateStatus changes the request's status as the node agent would.
func updateStatus(t *testing.T, c client.Client, crr *kruiseappsv1alpha1.ContainerRecreateRequest,
	change func(*kruiseappsv1alpha1.ContainerRecreateRequestStatus)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(crr), crr); err != nil {
			return err
		}
		change(&crr.Status)
		return c.Status().Update(t.Context(), crr)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// startRecreating gives the request phase Recreating, as the node agent does when it starts.
func startRecreating(t *testing.T, c client.Client, crr *kruiseappsv1alpha1.ContainerRecreateRequest) {
	t.Helper()
	updateStatus(t, c, crr, func(s *kruiseappsv1alpha1.ContainerRecreateRequestStatus) {
		s.Phase = kruiseappsv1alpha1.ContainerRecreateRequestRecreating
	})
}

// complete finishes the request as the node agent does once every container is recreated.
func complete(t *testing.T, c client.Client, crr *kruiseappsv1alpha1.ContainerRecreateRequest) {
	t.Helper()
	updateStatus(t, c, crr, func(s *kruiseappsv1alpha1.ContainerRecreateRequestStatus) {
		s.Phase = kruiseappsv1alpha1.ContainerRecreateRequestCompleted
		s.CompletionTime = ptr.To(metav1.Now())
	})
}

func get(t *testing.T, c client.Client, crr *kruiseappsv1alpha1.ContainerRecreateRequest) *kruiseappsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	got := &kruiseappsv1alpha1.ContainerRecreateRequest{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(crr), got); err != nil {
		t.Fatal(err)
	}
	return got
}

type condition func(ctx context.Context) (bool, string)

func syncAnnotationIs(c client.Client, crr *kruiseappsv1alpha1.ContainerRecreateRequest, want string) condition {
	return func(ctx context.Context) (bool, string) {
		got := &kruiseappsv1alpha1.ContainerRecreateRequest{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(crr), got); err != nil {
			return false, err.Error()
		}
		ann := got.Annotations[kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]
		return ann == want, ann
	}
}

// podHolders holds when the pod's KruisePodReady holders are exactly the requests keyed want, all of
// them ContainerRecreateRequest's, and the condition's status follows.
func podHolders(c client.Client, pod *corev1.Pod, want ...string) condition {
	return func(ctx context.Context) (bool, string) {
		got := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
			return false, err.Error()
		}
		cond := podreadiness.Condition(got)
		if cond == nil || cond.Type != pub.KruisePodReadyConditionType {
			return false, "no KruisePodReady condition"
		}
		var holders []podreadiness.Holder
		if cond.Message != "" {
			if err := json.Unmarshal([]byte(cond.Message), &holders); err != nil {
				return false, err.Error()
			}
		}
		var keys []string
		for _, h := range holders {
			if h.UserAgent == crrmanager.NotReadyUserAgent {
				keys = append(keys, h.Key)
			}
		}
		wantStatus := corev1.ConditionTrue
		if len(want) > 0 {
			wantStatus = corev1.ConditionFalse
		}
		return slices.Equal(keys, want) && cond.Status == wantStatus, fmt.Sprintf("%+v", cond)
	}
}

func gone(c client.Client, crr *kruiseappsv1alpha1.ContainerRecreateRequest) condition {
	return func(ctx context.Context) (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(crr), &kruiseappsv1alpha1.ContainerRecreateRequest{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	}
}

// eventually polls cond until it holds; what names the state in the failure.
func eventually(t *testing.T, what string, cond condition) {
	t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, itTimeout, true, func(ctx context.Context) (bool, error) {
		ok, msg := cond(ctx)
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}
