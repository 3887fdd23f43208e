package admission

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

type crrChange func(*kruiseappsv1alpha1.ContainerRecreateRequest)

type podChange func(*corev1.Pod)

// newCRR is a request for containers app and sidecar of pod p, as a user writes it, defaulted.
func newCRR(changes ...crrChange) *kruiseappsv1alpha1.ContainerRecreateRequest {
	crr := &kruiseappsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"},
		Spec: kruiseappsv1alpha1.ContainerRecreateRequestSpec{
			PodName:    "p",
			Containers: []kruiseappsv1alpha1.ContainerRecreateRequestContainer{{Name: "app"}, {Name: "sidecar"}},
		},
	}
	Default(crr)
	for _, c := range changes {
		c(crr)
	}
	return crr
}

// newPod is a running pod p on node n1 with started containers app (an httpGet preStop hook and a port)
// and sidecar (no hook).
func newPod(changes ...podChange) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid"},
		Spec: corev1.PodSpec{
			NodeName:                      "n1",
			TerminationGracePeriodSeconds: ptr.To[int64](45),
			Containers: []corev1.Container{
				{
					Name:  "app",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
						HTTPGet: &corev1.HTTPGetAction{Path: "/quit", Port: intstr.FromString("http")},
					}},
				},
				{Name: "sidecar"},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", ContainerID: "containerd://a1", RestartCount: 2},
				{Name: "sidecar", ContainerID: "containerd://s1"},
			},
		},
	}
	for _, c := range changes {
		c(pod)
	}
	return pod
}

func TestDefault(t *testing.T) {
	crr := &kruiseappsv1alpha1.ContainerRecreateRequest{}
	Default(crr)
	want := &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyFail}
	if diff := cmp.Diff(want, crr.Spec.Strategy); diff != "" {
		t.Errorf("strategy (-want +got):\n%s", diff)
	}
	ignore := newCRR(func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
		c.Spec.Strategy.FailurePolicy = kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore
	})
	Default(ignore)
	if ignore.Spec.Strategy.FailurePolicy != kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore {
		t.Errorf("failurePolicy Ignore replaced by %q", ignore.Spec.Strategy.FailurePolicy)
	}
	Default(nil) // no panic
}

// TestValidateCreateRejects has one rejected example per rule; each must yield exactly this one error.
func TestValidateCreateRejects(t *testing.T) {
	cases := []struct {
		name string
		crr  *kruiseappsv1alpha1.ContainerRecreateRequest
		pod  *corev1.Pod
		want string
	}{
		{"no pod name", newCRR(podName("")), newPod(), "spec.podName: Required value"},
		{"not a pod name", newCRR(podName("a/b")), newPod(), `spec.podName: Invalid value: "a/b"`},
		{"pod not found", newCRR(), nil, `spec.podName: Invalid value: "p": pod "p" not found in namespace "ns"`},
		{"pod deleting", newCRR(), newPod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }),
			`spec.podName: Invalid value: "p": pod "p" is being deleted`},
		{"pod finished", newCRR(), newPod(phase(corev1.PodSucceeded)),
			`spec.podName: Invalid value: "p": pod "p" has finished (phase Succeeded)`},
		{"pod not scheduled", newCRR(), newPod(func(p *corev1.Pod) { p.Spec.NodeName = "" }),
			`spec.podName: Invalid value: "p": pod "p" is not scheduled to a node yet`},
		{"no containers", newCRR(containers()), newPod(), "spec.containers: Required value"},
		{"unnamed container", newCRR(containers("app", "")), newPod(), "spec.containers[1].name: Required value"},
		{"duplicate container", newCRR(containers("app", "app")), newPod(), `spec.containers[1].name: Duplicate value: "app"`},
		{"unknown container", newCRR(containers("app", "x")), newPod(),
			`spec.containers[1].name: Invalid value: "x": container "x" not found in pod "p"`},
		{"container without status", newCRR(), newPod(func(p *corev1.Pod) { p.Status.ContainerStatuses = p.Status.ContainerStatuses[:1] }),
			`spec.containers[1].name: Invalid value: "sidecar": container "sidecar" has no status in pod "p" yet`},
		{"container not created", newCRR(), newPod(func(p *corev1.Pod) { p.Status.ContainerStatuses[0].ContainerID = "" }),
			`spec.containers[0].name: Invalid value: "app": container "app" of pod "p" has not been created yet`},
		{"short deadline", newCRR(func(c *kruiseappsv1alpha1.ContainerRecreateRequest) { c.Spec.ActiveDeadlineSeconds = ptr.To[int64](2) }),
			newPod(), "spec.activeDeadlineSeconds: Invalid value: 2: must be at least 3"},
		{"unknown failure policy", newCRR(func(c *kruiseappsv1alpha1.ContainerRecreateRequest) { c.Spec.Strategy.FailurePolicy = "Retry" }),
			newPod(), `spec.strategy.failurePolicy: Unsupported value: "Retry"`},
		{"negative termination grace", newCRR(func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
			c.Spec.Strategy.TerminationGracePeriodSeconds = ptr.To[int64](-1)
		}), newPod(), "spec.strategy.terminationGracePeriodSeconds: Invalid value: -1"},
		{"negative unready grace", newCRR(func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
			c.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](-1)
		}), newPod(), "spec.strategy.unreadyGracePeriodSeconds: Invalid value: -1"},
		{"no request", nil, newPod(), "spec: Required value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateCreate(tc.crr, tc.pod)
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Fatalf("errors %v, want exactly one containing %q", errs, tc.want)
			}
		})
	}
}

func TestValidateCreateAccepts(t *testing.T) {
	cases := map[string]struct {
		crr *kruiseappsv1alpha1.ContainerRecreateRequest
		pod *corev1.Pod
	}{
		"running pod": {newCRR(), newPod()},
		"pending pod": {newCRR(containers("app")), newPod(phase(corev1.PodPending))},
		"one of two":  {newCRR(containers("sidecar")), newPod()},
		"no strategy": {newCRR(func(c *kruiseappsv1alpha1.ContainerRecreateRequest) { c.Spec.Strategy = nil }), newPod()},
		"zero graces": {newCRR(graces(0, 0)), newPod()},
		"deadline 3s": {newCRR(func(c *kruiseappsv1alpha1.ContainerRecreateRequest) { c.Spec.ActiveDeadlineSeconds = ptr.To[int64](3) }), newPod()},
		"sidecars of a finished pod": {newCRR(containers("sidecar")), newPod(phase(corev1.PodSucceeded), func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: SidecarTerminatedConditionType, Status: corev1.ConditionTrue}}
		})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if errs := ValidateCreate(tc.crr, tc.pod); len(errs) > 0 {
				t.Fatalf("refused: %v", errs)
			}
		})
	}
}

// A faulty spec and a missing pod are reported together, so the user fixes everything at once.
func TestValidateCreateReportsEveryError(t *testing.T) {
	crr := newCRR(containers("app", "app"), func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
		c.Spec.ActiveDeadlineSeconds = ptr.To[int64](0)
	})
	got := fields(ValidateCreate(crr, nil))
	want := []string{"spec.containers[1].name", "spec.activeDeadlineSeconds", "spec.podName"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestFillFromPod(t *testing.T) {
	crr := newCRR()
	crr.Labels = map[string]string{"team": "a"}
	FillFromPod(crr, newPod())
	want := newCRR(func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
		c.Labels = map[string]string{
			"team": "a", kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey: "pod-uid",
			kruiseappsv1alpha1.ContainerRecreateRequestNodeNameKey: "n1", kruiseappsv1alpha1.ContainerRecreateRequestActiveKey: "true",
		}
		c.Spec.Strategy.TerminationGracePeriodSeconds = ptr.To[int64](45)
		c.Spec.Containers = []kruiseappsv1alpha1.ContainerRecreateRequestContainer{
			{
				Name:          "app",
				PreStop:       &kruiseappsv1alpha1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/quit", Port: intstr.FromString("http")}},
				Ports:         []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				StatusContext: &kruiseappsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://a1", RestartCount: 2},
			},
			{Name: "sidecar", StatusContext: &kruiseappsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://s1"}},
		}
	})
	if diff := cmp.Diff(want, crr); diff != "" {
		t.Errorf("filled request (-want +got):\n%s", diff)
	}
}

func TestFillFromPodKeepsTheStrategyGraceAndSkipsSleepHooks(t *testing.T) {
	crr := newCRR(graces(5, 0))
	pod := newPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Lifecycle.PreStop = &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 3}}
	})
	FillFromPod(crr, pod)
	if got := *crr.Spec.Strategy.TerminationGracePeriodSeconds; got != 5 {
		t.Errorf("terminationGracePeriodSeconds %d, want the strategy's 5", got)
	}
	if crr.Spec.Containers[0].PreStop != nil {
		t.Errorf("preStop %+v copied from a sleep hook", crr.Spec.Containers[0].PreStop)
	}
	exec := newPod(func(p *corev1.Pod) {
		p.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"stop"}}}}
	})
	crr = newCRR()
	FillFromPod(crr, exec)
	exec.Spec.Containers[1].Lifecycle.PreStop.Exec.Command[0] = "changed"
	if got := crr.Spec.Containers[1].PreStop; got == nil || got.Exec == nil || got.Exec.Command[0] != "stop" {
		t.Errorf("exec preStop %+v, want a copy of the pod's", got)
	}
	FillFromPod(nil, exec) // no panic
}

func TestValidateUpdate(t *testing.T) {
	stored := newCRR(func(c *kruiseappsv1alpha1.ContainerRecreateRequest) { FillFromPod(c, newPod()) })
	acquired := change(stored, func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
		c.Annotations = map[string]string{kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: "2030-01-01T00:00:00Z"}
	})
	cases := []struct {
		name     string
		cur, old *kruiseappsv1alpha1.ContainerRecreateRequest
		want     []string // fields refused
	}{
		{"unchanged", stored, stored, nil},
		{"status, active label, annotations, finalizers", change(stored, func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
			c.Status.Phase = kruiseappsv1alpha1.ContainerRecreateRequestCompleted
			delete(c.Labels, kruiseappsv1alpha1.ContainerRecreateRequestActiveKey)
			c.Annotations = map[string]string{kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: "now"}
			c.Finalizers = []string{kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey}
		}), stored, nil},
		{"pod name", change(stored, podName("q")), stored, []string{"spec.podName"}},
		{"one container", change(stored, func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
			c.Spec.Containers[1].StatusContext.RestartCount = 9
		}), stored, []string{"spec.containers[1]"}},
		{"container list", change(stored, containers("app")), stored, []string{"spec.containers"}},
		{"strategy", change(stored, graces(1, 1)), stored, []string{"spec.strategy"}},
		{"deadline and ttl", change(stored, func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
			c.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
			c.Spec.TTLSecondsAfterFinished = ptr.To[int32](60)
		}), stored, []string{"spec.activeDeadlineSeconds", "spec.ttlSecondsAfterFinished"}},
		{"labels", change(stored, func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
			c.Labels[kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey] = "other"
			delete(c.Labels, kruiseappsv1alpha1.ContainerRecreateRequestNodeNameKey)
		}), stored, []string{"metadata.labels[crr.apps.kruise.io/pod-uid]", "metadata.labels[crr.apps.kruise.io/node-name]"}},
		{"unready acquired changed", change(acquired, func(c *kruiseappsv1alpha1.ContainerRecreateRequest) { c.Annotations = nil }),
			acquired, []string{"metadata.annotations[crr.apps.kruise.io/unready-acquired]"}},
		{"nothing stored", stored, nil, []string{"spec"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateUpdate(tc.cur, tc.old)
			if diff := cmp.Diff(tc.want, fields(errs)); diff != "" {
				t.Errorf("refused fields (-want +got):\n%s\nerrors: %v", diff, errs)
			}
			for _, e := range errs {
				if tc.old != nil && e.Type != field.ErrorTypeForbidden {
					t.Errorf("%v: want Forbidden", e)
				}
			}
		})
	}
}

func fields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func change(crr *kruiseappsv1alpha1.ContainerRecreateRequest, c crrChange) *kruiseappsv1alpha1.ContainerRecreateRequest {
	out := crr.DeepCopy()
	c(out)
	return out
}

func podName(name string) crrChange {
	return func(c *kruiseappsv1alpha1.ContainerRecreateRequest) { c.Spec.PodName = name }
}

func containers(names ...string) crrChange {
	return func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
		c.Spec.Containers = nil
		for _, n := range names {
			c.Spec.Containers = append(c.Spec.Containers, kruiseappsv1alpha1.ContainerRecreateRequestContainer{Name: n})
		}
	}
}

func graces(termination, unready int64) crrChange {
	return func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
		c.Spec.Strategy.TerminationGracePeriodSeconds = ptr.To(termination)
		c.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To(unready)
	}
}

func phase(p corev1.PodPhase) podChange {
	return func(pod *corev1.Pod) { pod.Status.Phase = p }
}

// TestUpstreamPluginRequestIsFilled: upstream's kubectl-kruise sends each container's preStop and ports; such
// a request (here with a stale statusContext too) is accepted, and what the node agent reads comes from the pod.
func TestUpstreamPluginRequestIsFilled(t *testing.T) {
	sent := newCRR(func(c *kruiseappsv1alpha1.ContainerRecreateRequest) {
		c.Spec.Containers[0].PreStop = &kruiseappsv1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"stale"}}}
		c.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "old", ContainerPort: 1}}
		c.Spec.Containers[1].StatusContext = &kruiseappsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://old", RestartCount: 7}
	})
	if errs := ValidateCreate(sent, newPod()); len(errs) > 0 {
		t.Fatalf("ValidateCreate rejected the request upstream's plugin sends: %v", errs)
	}
	FillFromPod(sent, newPod())
	fromNames := newCRR()
	FillFromPod(fromNames, newPod())
	if diff := cmp.Diff(fromNames.Spec.Containers, sent.Spec.Containers); diff != "" {
		t.Errorf("containers filled from the pod differ from what was sent (-names only +sent):\n%s", diff)
	}
}
