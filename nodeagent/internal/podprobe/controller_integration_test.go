package podprobe_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/podprobe"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// A marker over two pods on two nodes fills both NodePodProbes (the named port resolved from the pod, which the
// manager's cache holds slim), counts them and holds its finalizer; a pod that becomes initialized joins, one
// relabelled out of the selector leaves.
func TestMarkerWritesTheProbesOfItsPods(t *testing.T) {
	e := start(t)
	n1, n2 := e.node(), e.node()
	a, b := e.pod("a", n1, nil), e.pod("b", n2, nil)
	e.pod("other", n1, func(p *corev1.Pod) { p.Labels["app"] = "web" })
	pending := e.pod("pending", n1, nil)
	e.setInitialized(pending, corev1.ConditionFalse)
	m := e.marker("idle", execProbe("idle", "/idle.sh"), tcpProbe("port", intstr.FromString("http")))

	e.waitProbes(n1, a, "idle#idle", "idle#port")
	e.waitProbes(n2, b, "idle#idle", "idle#port")
	entry := e.entry(n1, a)
	if entry.IP != a.Status.PodIP || entry.Probes[1].Probe.TCPSocket.Port != intstr.FromInt32(8080) ||
		entry.Probes[0].ContainerName != "app" || entry.Probes[0].Probe.Exec.Command[0] != "/idle.sh" {
		t.Errorf("entry of a: %+v", entry)
	}
	if len(e.npp(n1).Spec.PodProbes) != 1 {
		t.Errorf("the NodePodProbe of %s holds %+v, want a's entry only", n1, e.npp(n1).Spec.PodProbes)
	}
	waitStatus(e, m, 2)
	if !slices.Contains(m.Finalizers, kruiseappsv1alpha1.PodProbeMarkerFinalizer) {
		t.Errorf("finalizers %v", m.Finalizers)
	}

	e.setInitialized(pending, corev1.ConditionTrue)
	e.waitProbes(n1, pending, "idle#idle", "idle#port")
	waitStatus(e, m, 3)

	managertest.Update(t, e.c, b, func(p *corev1.Pod) { p.Labels["app"] = "web" })
	e.waitProbes(n2, b)
	waitStatus(e, m, 2)
}

// waitStatus waits for the marker's status to count matched pods for its generation, and reads it into m.
func waitStatus(e *env, m *kruiseappsv1alpha1.PodProbeMarker, matched int64) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("matchedPods %d", matched), func() (bool, error) {
		if err := e.get(m); err != nil {
			return false, err
		}
		return m.Status.MatchedPods == matched && m.Status.ObservedGeneration == m.Generation, fmt.Errorf("status %+v, generation %d", m.Status, m.Generation)
	})
}

// A probe whose port a pod's container does not name is left out of that pod's entry, and the marker says so.
func TestUnresolvedPortIsSkipped(t *testing.T) {
	e := start(t)
	n := e.node()
	a := e.pod("a", n, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })
	m := e.marker("idle", execProbe("idle", "/idle.sh"), tcpProbe("port", intstr.FromString("http")))
	e.waitProbes(n, a, "idle#idle")
	note := e.waitEvent("PodProbeMarker", m.Name, podprobe.ReasonUnresolvedProbePort)
	if !strings.Contains(note, "probe port of pod "+e.ns+"/a") || !strings.Contains(note, `no port named "http"`) {
		t.Errorf("event note %q", note)
	}
}

// Editing a marker's probes rewrites its probes in place, drops the one it no longer has and keeps another
// marker's.
func TestEditedMarkerRewritesItsProbes(t *testing.T) {
	e := start(t)
	n := e.node()
	a := e.pod("a", n, nil)
	other := e.marker("other", execProbe("other", "/other.sh"))
	e.waitProbes(n, a, "other#other")
	m := e.marker("idle", execProbe("idle", "/idle.sh"), tcpProbe("port", intstr.FromInt32(8080)))
	e.waitProbes(n, a, "other#other", "idle#idle", "idle#port")

	managertest.Update(t, e.c, m, func(m *kruiseappsv1alpha1.PodProbeMarker) {
		m.Spec.Probes = []kruiseappsv1alpha1.PodContainerProbe{execProbe("idle", "/idle-v2.sh")}
	})
	e.waitProbes(n, a, "other#other", "idle#idle")
	e.eventually("the edited command", func() (bool, error) {
		for _, p := range e.entry(n, a).Probes {
			if p.Name == "idle#idle" {
				return p.Probe.Exec.Command[0] == "/idle-v2.sh", fmt.Errorf("command %v", p.Probe.Exec.Command)
			}
		}
		return false, nil
	})
	waitStatus(e, m, 1)
	waitStatus(e, other, 1)
}

// Deleting a marker takes its probes out of every NodePodProbe before it goes, and only its own: a marker whose
// name ends with the deleted one's keeps its probes (upstream matched names by substring). An entry left without
// probes goes.
func TestDeletedMarkerTakesItsProbesBack(t *testing.T) {
	e := start(t)
	n1, n2 := e.node(), e.node()
	a, b := e.pod("a", n1, nil), e.pod("b", n2, nil)
	idle := e.marker("idle", execProbe("idle", "/idle.sh"))
	xidle := e.marker("xidle", execProbe("x", "/x.sh"))
	e.waitProbes(n1, a, "idle#idle", "xidle#x")
	e.waitProbes(n2, b, "idle#idle", "xidle#x")

	if err := e.c.Delete(t.Context(), idle); err != nil {
		t.Fatal(err)
	}
	e.waitProbes(n1, a, "xidle#x")
	e.waitProbes(n2, b, "xidle#x")
	e.eventually("the marker gone", func() (bool, error) {
		err := e.get(idle)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})

	if err := e.c.Delete(t.Context(), xidle); err != nil {
		t.Fatal(err)
	}
	e.waitProbes(n1, a)
	e.waitProbes(n2, b)
	if got := e.npp(n1).Spec.PodProbes; len(got) != 0 {
		t.Errorf("entries left: %+v", got)
	}
}

// The agent's results mark the pod: Succeeded sets the Succeeded policy's labels and annotations and a True
// condition; Failed sets the Failed policy's, removes what only the Succeeded policy set, and the condition goes
// False with the result's message.
func TestResultsMarkThePod(t *testing.T) {
	e := start(t)
	n := e.node()
	a := e.pod("a", n, nil)
	probe := execProbe("idle", "/idle.sh")
	probe.MarkerPolicy = []kruiseappsv1alpha1.ProbeMarkerPolicy{
		{State: kruiseappsv1alpha1.ProbeSucceeded, Labels: map[string]string{"gameserver-idle": "true"},
			Annotations: map[string]string{"controller.kubernetes.io/pod-deletion-cost": "-10"}},
		{State: kruiseappsv1alpha1.ProbeFailed, Labels: map[string]string{"gameserver-idle": "false"}},
	}
	e.marker("game", probe)
	e.waitProbes(n, a, "game#idle")

	at := metav1.Now()
	e.report(n, a, kruiseappsv1alpha1.ContainerProbeState{Name: "game#idle", State: kruiseappsv1alpha1.ProbeSucceeded,
		LastProbeTime: at, LastTransitionTime: at, Message: "no players"})
	waitPod(e, a, "marked idle", func(p *corev1.Pod) bool {
		c := condition(p, "game.kruise.io/idle")
		return p.Labels["gameserver-idle"] == "true" && p.Annotations["controller.kubernetes.io/pod-deletion-cost"] == "-10" &&
			c != nil && c.Status == corev1.ConditionTrue && c.Message == "no players" && c.LastTransitionTime.Unix() == at.Unix()
	})
	if got := condition(a, corev1.PodInitialized); got == nil || got.Status != corev1.ConditionTrue {
		t.Errorf("the kubelet's condition changed: %+v", a.Status.Conditions)
	}
	note := e.waitEvent("Pod", a.Name, podprobe.ReasonMarkedPod)
	if !strings.Contains(note, "game#idle") || !strings.Contains(note, "label gameserver-idle=true set") {
		t.Errorf("event note %q", note)
	}

	e.report(n, a, kruiseappsv1alpha1.ContainerProbeState{Name: "game#idle", State: kruiseappsv1alpha1.ProbeFailed,
		LastProbeTime: metav1.Now(), LastTransitionTime: metav1.Now(), Message: "2 players"})
	waitPod(e, a, "marked busy", func(p *corev1.Pod) bool {
		c := condition(p, "game.kruise.io/idle")
		_, cost := p.Annotations["controller.kubernetes.io/pod-deletion-cost"]
		return p.Labels["gameserver-idle"] == "false" && !cost && p.Labels["app"] == "game" &&
			c != nil && c.Status == corev1.ConditionFalse && c.Message == "2 players"
	})
}

// Two markers naming one condition type: the first result's sets it, the other is said to conflict.
func TestConditionConflict(t *testing.T) {
	e := start(t)
	n := e.node()
	a := e.pod("a", n, nil)
	e.marker("first", execProbe("idle", "/idle.sh"))
	e.marker("second", execProbe("idle", "/other.sh"))
	e.waitProbes(n, a, "first#idle", "second#idle")
	e.report(n, a,
		kruiseappsv1alpha1.ContainerProbeState{Name: "first#idle", State: kruiseappsv1alpha1.ProbeSucceeded},
		kruiseappsv1alpha1.ContainerProbeState{Name: "second#idle", State: kruiseappsv1alpha1.ProbeFailed})
	waitPod(e, a, "the first result's condition", func(p *corev1.Pod) bool {
		c := condition(p, "game.kruise.io/idle")
		return c != nil && c.Status == corev1.ConditionTrue
	})
	note := e.waitEvent("Pod", a.Name, podprobe.ReasonProbeConditionConflict)
	if !strings.Contains(note, "second#idle") || !strings.Contains(note, "first#idle") {
		t.Errorf("event note %q", note)
	}
}

func waitPod(e *env, p *corev1.Pod, what string, cond func(*corev1.Pod) bool) {
	e.t.Helper()
	e.eventually(what, func() (bool, error) {
		if err := e.get(p); err != nil {
			return false, err
		}
		return cond(p), fmt.Errorf("labels %v annotations %v conditions %+v", p.Labels, p.Annotations, p.Status.Conditions)
	})
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// Each ready node gets an empty NodePodProbe of its name, a node that is not ready or virtual none; a deleted
// pod's entry is dropped, and a deleted node's NodePodProbe goes.
func TestNodePodProbesFollowNodesAndPods(t *testing.T) {
	e := start(t)
	n := e.node()
	e.eventually("the NodePodProbe of the ready node", func() (bool, error) { return e.npp(n) != nil, nil })
	if npp := e.npp(n); len(npp.Spec.PodProbes) != 0 || len(npp.OwnerReferences) != 0 {
		t.Errorf("new NodePodProbe %+v", npp)
	}
	notReady := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ppm-node-%d", names.Add(1))}}
	virtual := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ppm-node-%d", names.Add(1)),
		Labels: map[string]string{podprobe.VirtualKubeletLabel: podprobe.VirtualKubeletValue}}}
	for _, node := range []*corev1.Node{notReady, virtual} {
		if err := e.c.Create(t.Context(), node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.c.Delete(t.Context(), node) })
	}
	e.setReady(notReady, corev1.ConditionFalse)
	e.setReady(virtual, corev1.ConditionTrue)

	a, b := e.pod("a", n, nil), e.pod("b", n, nil)
	e.marker("idle", execProbe("idle", "/idle.sh"))
	e.waitProbes(n, a, "idle#idle")
	e.waitProbes(n, b, "idle#idle")
	if err := e.c.Delete(t.Context(), a, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	e.waitProbes(n, a)
	if got := e.probes(n, b); len(got) != 1 {
		t.Errorf("b's probes %v", got)
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
	if err := e.c.Delete(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	e.eventually("the NodePodProbe deleted with its node", func() (bool, error) { return e.npp(n) == nil, nil })
	e.consistently("no NodePodProbe of a node not ready or virtual", func() bool { return e.npp(notReady.Name) == nil && e.npp(virtual.Name) == nil })
}
