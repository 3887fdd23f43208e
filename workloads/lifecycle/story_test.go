package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// The seed's example operator keeps pods registered in a service registry outside Kubernetes. Its CloneSet
// holds pods with two labels; the operator flips them (the seed writes the delete label's release as
// "fasle", which works: a handler matches only its exact value).
const (
	deleteHookLabel  = "example.com/unready-blocker-delete"
	inPlaceHookLabel = "example.com/unready-blocker-inplace"
	newlyCreateLabel = "example.com/newly-create"
	blocker          = "example.com/unready-blocker"
)

func seedLabelLifecycle(markNotReady bool) *pub.Lifecycle {
	return &pub.Lifecycle{
		InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{inPlaceHookLabel: "true"}, MarkPodNotReady: markNotReady},
		PreDelete:     &pub.LifecycleHook{LabelsHandler: map[string]string{deleteHookLabel: "true"}, MarkPodNotReady: markNotReady},
	}
}

// seedLabelTemplate is the seed's pod template labels. The seed's comment names the inplace label for the
// preDelete hook too, evidently meaning the delete label; without it a pod is deleted at once (see
// TestSeedTemplateWithoutTheDeleteLabel).
func seedLabelTemplate() map[string]string {
	return map[string]string{"app": "nginx", newlyCreateLabel: "true", inPlaceHookLabel: "true", deleteHookLabel: "true"}
}

// seedLabelOperator is the seed's Reconcile switch, one branch per call.
func seedLabelOperator(pod *corev1.Pod) string {
	state := State(pod)
	switch {
	case state == normal && pod.Labels[newlyCreateLabel] == "true" && podReady(pod):
		pod.Labels[newlyCreateLabel] = "false"
		return "postRegistry"
	case state == preparingUpdate && pod.Labels[inPlaceHookLabel] == "true":
		pod.Labels[inPlaceHookLabel] = "false"
		return "postFailOver"
	case state == updated && pod.Labels[inPlaceHookLabel] == "false" && podReady(pod):
		pod.Labels[inPlaceHookLabel] = "true"
		return "postRegistry"
	case state == preparingDelete && pod.Labels[deleteHookLabel] == "true":
		pod.Labels[deleteHookLabel] = "fasle"
		return "postUnregister"
	}
	return "nothing to do"
}

// seedFinalizerLifecycle is the seed's "user controller" example: one finalizer as every hook, the pod
// template without it, so a new pod waits in PreparingNormal until the operator finds it available.
func seedFinalizerLifecycle() *pub.Lifecycle {
	hook := func() *pub.LifecycleHook { return &pub.LifecycleHook{FinalizersHandler: []string{blocker}} }
	return &pub.Lifecycle{PreNormal: hook(), InPlaceUpdate: hook(), PreDelete: hook()}
}

func seedFinalizerOperator(pod *corev1.Pod) string {
	has := slices.Contains(pod.Finalizers, blocker)
	switch State(pod) {
	case preparingNormal, updated:
		if !has && podReady(pod) {
			pod.Finalizers = append(pod.Finalizers, blocker)
			return "traffic on, add finalizer"
		}
	case preparingUpdate, preparingDelete:
		if has {
			pod.Finalizers = slices.DeleteFunc(pod.Finalizers, func(f string) bool { return f == blocker })
			return "traffic off, remove finalizer"
		}
	}
	return "nothing to do"
}

// story plays the workload controller, the kubelet and an operator around one pod and writes a transcript.
type story struct {
	lc       *pub.Lifecycle
	pod      *corev1.Pod
	operator func(*corev1.Pod) string
	lines    []string
}

func newStory(lc *pub.Lifecycle, labels map[string]string, operator func(*corev1.Pod) string) *story {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nginx-abcde", Labels: labels}}
	podreadiness.AddGate(pod)
	return &story{lc: lc, pod: pod, operator: operator}
}

// workload applies one decision as a controller would: readiness (status) first, then the state label.
func (s *story) workload(intent Intent) {
	d := Plan(s.lc, s.pod, intent)
	ApplyReadiness(s.pod, d, now)
	kubelet(s.pod)
	SetState(s.pod, d.State, now)
	s.lines = append(s.lines, fmt.Sprintf("%s: %s%s ready=%v", intent, d.State, outcome(intent, d), podReady(s.pod)))
}

func outcome(intent Intent, d Decision) string {
	switch {
	case intent == IntentSettle || intent == IntentUpdateFinished:
		return ""
	case !d.Proceed:
		return " wait"
	case intent == IntentDelete:
		return " deleted"
	default:
		return " proceed"
	}
}

// start is the pod running: the pod-readiness controller's condition, then the kubelet's Ready.
func (s *story) start() {
	podreadiness.InitCondition(s.pod, metav1.NewTime(now))
	kubelet(s.pod)
}

func (s *story) operate() {
	s.lines = append(s.lines, "operator: "+s.operator(s.pod))
	kubelet(s.pod)
}

// kubelet sets Ready from the readiness gates, containers being ready.
func kubelet(pod *corev1.Pod) {
	status := corev1.ConditionTrue
	for _, g := range pod.Spec.ReadinessGates {
		if c := findCondition(pod, g.ConditionType); c == nil || c.Status != corev1.ConditionTrue {
			status = corev1.ConditionFalse
		}
	}
	if c := findCondition(pod, corev1.PodReady); c != nil {
		c.Status = status
		return
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: status})
}

func podReady(pod *corev1.Pod) bool {
	c := findCondition(pod, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func findCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// seedScript creates, updates in place and deletes the pod, letting the operator act between passes.
func seedScript(s *story) {
	s.workload(IntentCreate)
	s.start()
	s.workload(IntentSettle)
	s.operate()
	s.workload(IntentSettle)

	s.workload(IntentUpdate)
	s.workload(IntentUpdate)
	s.operate()
	s.workload(IntentUpdate)
	s.workload(IntentUpdateFinished)
	s.operate()
	s.workload(IntentSettle)
	s.operate()

	s.workload(IntentDelete)
	s.operate()
	s.workload(IntentDelete)
}

func TestSeedOperatorStories(t *testing.T) {
	cases := []struct {
		name  string
		story *story
		want  string
	}{{
		name:  "labels",
		story: newStory(seedLabelLifecycle(false), seedLabelTemplate(), seedLabelOperator),
		want: `
Create: PreparingNormal proceed ready=false
Settle: Normal ready=true
operator: postRegistry
Settle: Normal ready=true
Update: PreparingUpdate wait ready=true
Update: PreparingUpdate wait ready=true
operator: postFailOver
Update: Updating proceed ready=true
UpdateFinished: Updated ready=true
operator: postRegistry
Settle: Normal ready=true
operator: nothing to do
Delete: PreparingDelete wait ready=true
operator: postUnregister
Delete: PreparingDelete deleted ready=true`,
	}, {
		name:  "labels with markPodNotReady",
		story: newStory(seedLabelLifecycle(true), seedLabelTemplate(), seedLabelOperator),
		want: `
Create: PreparingNormal proceed ready=false
Settle: Normal ready=true
operator: postRegistry
Settle: Normal ready=true
Update: PreparingUpdate wait ready=false
Update: PreparingUpdate wait ready=false
operator: postFailOver
Update: Updating proceed ready=false
UpdateFinished: Updated ready=true
operator: postRegistry
Settle: Normal ready=true
operator: nothing to do
Delete: PreparingDelete wait ready=false
operator: postUnregister
Delete: PreparingDelete deleted ready=false`,
	}, {
		name:  "finalizers",
		story: newStory(seedFinalizerLifecycle(), map[string]string{"app": "nginx"}, seedFinalizerOperator),
		want: `
Create: PreparingNormal proceed ready=false
Settle: PreparingNormal ready=true
operator: traffic on, add finalizer
Settle: Normal ready=true
Update: PreparingUpdate wait ready=true
Update: PreparingUpdate wait ready=true
operator: traffic off, remove finalizer
Update: Updating proceed ready=true
UpdateFinished: Updated ready=true
operator: traffic on, add finalizer
Settle: Normal ready=true
operator: nothing to do
Delete: PreparingDelete wait ready=true
operator: traffic off, remove finalizer
Delete: PreparingDelete deleted ready=true`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seedScript(tc.story)
			got := strings.Join(tc.story.lines, "\n")
			if diff := cmp.Diff(strings.TrimPrefix(tc.want, "\n"), got); diff != "" {
				t.Errorf("transcript (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSeedTemplateWithoutTheDeleteLabel: as the seed's template is written, the preDelete label is missing,
// so nothing holds the pod and it is deleted at once.
func TestSeedTemplateWithoutTheDeleteLabel(t *testing.T) {
	labels := seedLabelTemplate()
	delete(labels, deleteHookLabel)
	s := newStory(seedLabelLifecycle(true), labels, seedLabelOperator)
	s.workload(IntentCreate)
	s.start()
	s.workload(IntentSettle)
	s.workload(IntentDelete)
	want := []string{"Create: PreparingNormal proceed ready=false", "Settle: Normal ready=true", "Delete: Normal deleted ready=true"}
	if diff := cmp.Diff(want, s.lines); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
}

// TestHoldersFollowTheState checks the KruisePodReady message a markPodNotReady pod carries on its way.
func TestHoldersFollowTheState(t *testing.T) {
	s := newStory(seedLabelLifecycle(true), seedLabelTemplate(), seedLabelOperator)
	s.workload(IntentCreate)
	s.start()
	s.workload(IntentSettle)
	var got []string
	record := func() {
		c := podreadiness.Condition(s.pod)
		got = append(got, fmt.Sprintf("%s %s %s", State(s.pod), c.Status, c.Message))
	}
	for _, step := range []func(){
		func() { s.workload(IntentUpdate) }, s.operate, func() { s.workload(IntentUpdate) },
		func() { s.workload(IntentUpdateFinished) }, func() { s.workload(IntentDelete) },
	} {
		step()
		record()
	}
	want := []string{
		`PreparingUpdate False [{"userAgent":"Lifecycle","key":"preUpdateHook"}]`,
		`PreparingUpdate False [{"userAgent":"Lifecycle","key":"preUpdateHook"}]`,
		`Updating False [{"userAgent":"Lifecycle","key":"preUpdateHook"}]`,
		`Updated True `,
		`PreparingDelete False [{"userAgent":"Lifecycle","key":"preDeleteHook"}]`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("KruisePodReady along the way (-want +got):\n%s", diff)
	}
}
