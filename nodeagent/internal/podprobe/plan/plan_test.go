package plan

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var now = metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))

type podOpt func(*corev1.Pod)

// pod is an eligible pod of namespace ns on node, its container app with port http 8080.
func pod(name, node string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0." + name,
			Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func execProbe(cmd ...string) kruiseappsv1alpha1.ContainerProbeSpec {
	return kruiseappsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		Exec: &corev1.ExecAction{Command: cmd}}}}
}

func tcpProbe(port intstr.IntOrString) kruiseappsv1alpha1.ContainerProbeSpec {
	return kruiseappsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		TCPSocket: &corev1.TCPSocketAction{Port: port}}}}
}

func httpProbe(port intstr.IntOrString) kruiseappsv1alpha1.ContainerProbeSpec {
	return kruiseappsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/idle", Port: port, Scheme: corev1.URISchemeHTTP}}}}
}

func TestEligible(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"running and initialized", pod("a", "n1"), true},
		{"not scheduled", pod("a", ""), false},
		{"not initialized", pod("a", "n1", func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }), false},
		{"no Initialized condition", pod("a", "n1", func(p *corev1.Pod) { p.Status.Conditions = nil }), false},
		{"succeeded", pod("a", "n1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false},
		{"failed", pod("a", "n1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
		{"being deleted", pod("a", "n1", func(p *corev1.Pod) { p.DeletionTimestamp = &now }), false},
	} {
		if got := Eligible(tc.pod); got != tc.want {
			t.Errorf("%s: Eligible = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestResolvePorts(t *testing.T) {
	sidecar := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "proxy", Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 15000}}}}
	}
	for _, tc := range []struct {
		name      string
		probe     kruiseappsv1alpha1.ContainerProbeSpec
		container string
		want      kruiseappsv1alpha1.ContainerProbeSpec
		err       bool
	}{
		{"exec as it is", execProbe("true"), "app", execProbe("true"), false},
		{"a number as it is", tcpProbe(intstr.FromInt32(9000)), "nowhere", tcpProbe(intstr.FromInt32(9000)), false},
		{"a named tcpSocket port", tcpProbe(intstr.FromString("http")), "app", tcpProbe(intstr.FromInt32(8080)), false},
		{"a named httpGet port", httpProbe(intstr.FromString("http")), "app", httpProbe(intstr.FromInt32(8080)), false},
		{"a number written as a string", httpProbe(intstr.FromString("9090")), "app", httpProbe(intstr.FromInt32(9090)), false},
		{"a sidecar's port", tcpProbe(intstr.FromString("admin")), "proxy", tcpProbe(intstr.FromInt32(15000)), false},
		{"a name the container lacks", tcpProbe(intstr.FromString("grpc")), "app", kruiseappsv1alpha1.ContainerProbeSpec{}, true},
		{"a number out of range", tcpProbe(intstr.FromString("70000")), "app", kruiseappsv1alpha1.ContainerProbeSpec{}, true},
		{"no such container", tcpProbe(intstr.FromString("http")), "other", kruiseappsv1alpha1.ContainerProbeSpec{}, true},
	} {
		before := tc.probe.DeepCopy()
		got, err := ResolvePorts(tc.probe, tc.container, pod("a", "n1", sidecar))
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v, want error %v", tc.name, err, tc.err)
			continue
		}
		if diff := cmp.Diff(*before, tc.probe); diff != "" {
			t.Errorf("%s: the probe given changed:\n%s", tc.name, diff)
		}
		if !tc.err {
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: (-want +got)\n%s", tc.name, diff)
			}
		}
	}
}

func marker(name string, probes ...kruiseappsv1alpha1.PodContainerProbe) *kruiseappsv1alpha1.PodProbeMarker {
	return &kruiseappsv1alpha1.PodProbeMarker{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: kruiseappsv1alpha1.PodProbeMarkerSpec{Probes: probes}}
}

func probe(name string, spec kruiseappsv1alpha1.ContainerProbeSpec) kruiseappsv1alpha1.PodContainerProbe {
	return kruiseappsv1alpha1.PodContainerProbe{Name: name, ContainerName: "app", Probe: spec}
}

func cprobe(name string, spec kruiseappsv1alpha1.ContainerProbeSpec) kruiseappsv1alpha1.ContainerProbe {
	return kruiseappsv1alpha1.ContainerProbe{Name: name, ContainerName: "app", Probe: spec}
}

func entry(p *corev1.Pod, probes ...kruiseappsv1alpha1.ContainerProbe) kruiseappsv1alpha1.PodProbe {
	return kruiseappsv1alpha1.PodProbe{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID), IP: p.Status.PodIP, Probes: probes}
}

func TestWant(t *testing.T) {
	m := marker("idle", probe("exec", execProbe("idle.sh")), probe("port", tcpProbe(intstr.FromString("http"))))
	a, b, c := pod("a", "n1"), pod("b", "n2"), pod("c", "n1")
	noPort := pod("d", "n2", func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })
	pending := pod("e", "n1", func(p *corev1.Pod) { p.Status.Conditions = nil })
	elsewhere := pod("f", "n1", func(p *corev1.Pod) { p.Namespace = "other" })
	d := Want(m, []*corev1.Pod{a, b, c, noPort, pending, elsewhere})
	resolved := []kruiseappsv1alpha1.ContainerProbe{cprobe("idle#exec", execProbe("idle.sh")), cprobe("idle#port", tcpProbe(intstr.FromInt32(8080)))}
	want := map[string][]kruiseappsv1alpha1.PodProbe{
		"n1": {entry(a, resolved...), entry(c, resolved...)},
		"n2": {entry(b, resolved...), entry(noPort, resolved[0])},
	}
	if diff := cmp.Diff(want, d.ByNode); diff != "" {
		t.Errorf("entries (-want +got)\n%s", diff)
	}
	if d.Matched != 4 {
		t.Errorf("matched %d, want 4", d.Matched)
	}
	if len(d.Skipped) != 1 || d.Skipped[0].Pod != "ns/d" || d.Skipped[0].Probe != "port" {
		t.Errorf("skipped %v, want the port probe of ns/d", d.Skipped)
	}
}

func TestWithMarker(t *testing.T) {
	a, b := pod("a", "n1"), pod("b", "n1")
	idle := cprobe("idle#exec", execProbe("idle.sh"))
	idleV2 := cprobe("idle#exec", execProbe("idle-v2.sh"))
	idlePort := cprobe("idle#port", tcpProbe(intstr.FromInt32(8080)))
	other := cprobe("other#exec", execProbe("other.sh"))
	xidle := cprobe("xidle#exec", execProbe("x.sh"))
	spec := func(entries ...kruiseappsv1alpha1.PodProbe) kruiseappsv1alpha1.NodePodProbeSpec {
		return kruiseappsv1alpha1.NodePodProbeSpec{PodProbes: entries}
	}
	inNS := func(e kruiseappsv1alpha1.PodProbe, ns string) kruiseappsv1alpha1.PodProbe { e.Namespace = ns; return e }
	withIP := func(e kruiseappsv1alpha1.PodProbe, ip string) kruiseappsv1alpha1.PodProbe { e.IP = ip; return e }
	withUID := func(e kruiseappsv1alpha1.PodProbe, uid string) kruiseappsv1alpha1.PodProbe { e.UID = uid; return e }
	for _, tc := range []struct {
		name    string
		spec    kruiseappsv1alpha1.NodePodProbeSpec
		want    []kruiseappsv1alpha1.PodProbe
		out     kruiseappsv1alpha1.NodePodProbeSpec
		changed bool
	}{
		{"new entries", spec(), []kruiseappsv1alpha1.PodProbe{entry(a, idle), entry(b, idle)},
			spec(entry(a, idle), entry(b, idle)), true},
		{"nothing to change", spec(entry(a, other, idle)), []kruiseappsv1alpha1.PodProbe{entry(a, idle)},
			spec(entry(a, other, idle)), false},
		{"added beside another marker's probes", spec(entry(a, other)), []kruiseappsv1alpha1.PodProbe{entry(a, idle)},
			spec(entry(a, other, idle)), true},
		{"a changed probe replaced in place", spec(entry(a, idle, other)), []kruiseappsv1alpha1.PodProbe{entry(a, idleV2)},
			spec(entry(a, idleV2, other)), true},
		{"a probe the marker no longer has removed", spec(entry(a, idle, idlePort, other)), []kruiseappsv1alpha1.PodProbe{entry(a, idlePort)},
			spec(entry(a, idlePort, other)), true},
		{"a pod no longer matched loses the marker's probes", spec(entry(a, idle, other), entry(b, idle)), []kruiseappsv1alpha1.PodProbe{entry(a, idle)},
			spec(entry(a, idle, other)), true},
		{"the marker gone (nil)", spec(entry(a, other, idle), entry(b, idle, idlePort)), nil,
			spec(entry(a, other)), true},
		{"another marker whose name ends with the name keeps its probes", spec(entry(a, xidle, idle)), nil,
			spec(entry(a, xidle)), true},
		{"another namespace's entries are not the marker's", spec(inNS(entry(a, idle), "other")), nil,
			spec(inNS(entry(a, idle), "other")), false},
		{"an empty IP filled", spec(withIP(entry(a, idle), "")), []kruiseappsv1alpha1.PodProbe{entry(a, idle)},
			spec(entry(a, idle)), true},
		{"a new IP taken", spec(withIP(entry(a, idle), "10.9.9.9")), []kruiseappsv1alpha1.PodProbe{entry(a, idle)},
			spec(entry(a, idle)), true},
		{"no IP reported keeps the known one", spec(entry(a, idle)), []kruiseappsv1alpha1.PodProbe{withIP(entry(a, idle), "")},
			spec(entry(a, idle)), false},
		{"an earlier pod of the name is another entry", spec(withUID(entry(a, idle, other), "old")), []kruiseappsv1alpha1.PodProbe{entry(a, idle)},
			spec(withUID(entry(a, other), "old"), entry(a, idle)), true},
		{"a pod whose every probe was skipped gets no entry", spec(), []kruiseappsv1alpha1.PodProbe{entry(a)},
			spec(), false},
	} {
		before := tc.spec.DeepCopy()
		out, changed := WithMarker(tc.spec, "ns", "idle", tc.want)
		if diff := cmp.Diff(tc.out.PodProbes, out.PodProbes); diff != "" || changed != tc.changed {
			t.Errorf("%s: changed %v (want %v), spec (-want +got)\n%s", tc.name, changed, tc.changed, diff)
		}
		if diff := cmp.Diff(before, &tc.spec); diff != "" {
			t.Errorf("%s: the spec given changed:\n%s", tc.name, diff)
		}
	}
}

func TestMarkerKeys(t *testing.T) {
	a := pod("a", "n1")
	npp := &kruiseappsv1alpha1.NodePodProbe{Spec: kruiseappsv1alpha1.NodePodProbeSpec{PodProbes: []kruiseappsv1alpha1.PodProbe{
		entry(a, cprobe("idle#exec", execProbe()), cprobe("idle#port", execProbe()), cprobe("other#x", execProbe()), cprobe("no-marker", execProbe())),
	}}}
	if diff := cmp.Diff([]string{"ns/idle", "ns/other"}, MarkerKeys(npp)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestKept(t *testing.T) {
	live, replaced, done, deleting, orphan := pod("a", "n1"), pod("b", "n1"), pod("c", "n1"), pod("d", "n1"), pod("e", "n1")
	idle, gone := cprobe("idle#exec", execProbe()), cprobe("gone#exec", execProbe())
	unnamed := cprobe("by-hand", execProbe())
	spec := kruiseappsv1alpha1.NodePodProbeSpec{PodProbes: []kruiseappsv1alpha1.PodProbe{
		entry(live, idle, gone, unnamed), entry(replaced, idle), entry(done, idle), entry(deleting, idle), entry(pod("x", "n1"), idle),
		entry(orphan, gone)}}
	replaced = replaced.DeepCopy()
	replaced.UID = "new"
	done.Status.Phase = corev1.PodSucceeded
	deleting.DeletionTimestamp = &now
	pods := map[string]*corev1.Pod{"a": live, "b": replaced, "c": done, "d": deleting, "e": orphan}
	podOf := func(_, name string) *corev1.Pod { return pods[name] }
	markerExists := func(ns, name string) bool { return ns == "ns" && name == "idle" }
	out, changed := Kept(spec, podOf, markerExists)
	want := []kruiseappsv1alpha1.PodProbe{entry(live, idle, unnamed)}
	if diff := cmp.Diff(want, out.PodProbes); !changed || diff != "" {
		t.Errorf("changed %v, (-want +got)\n%s", changed, diff)
	}
	if _, changed := Kept(out, podOf, markerExists); changed {
		t.Error("nothing left to drop, yet changed")
	}
}

func TestForPod(t *testing.T) {
	both := kruiseappsv1alpha1.PodContainerProbe{Name: "idle", PodConditionType: "game.kruise.io/idle",
		MarkerPolicy: []kruiseappsv1alpha1.ProbeMarkerPolicy{
			{State: kruiseappsv1alpha1.ProbeSucceeded, Labels: map[string]string{"idle": "true"},
				Annotations: map[string]string{"controller.kubernetes.io/pod-deletion-cost": "-10"}},
			{State: kruiseappsv1alpha1.ProbeFailed, Labels: map[string]string{"idle": "false"}},
		}}
	succeededOnly := kruiseappsv1alpha1.PodContainerProbe{Name: "ready",
		MarkerPolicy: []kruiseappsv1alpha1.ProbeMarkerPolicy{{State: kruiseappsv1alpha1.ProbeSucceeded, Labels: map[string]string{"warm": "yes"}}}}
	sameType := kruiseappsv1alpha1.PodContainerProbe{Name: "dup", PodConditionType: "game.kruise.io/idle"}
	probes := map[string]*kruiseappsv1alpha1.PodContainerProbe{"m#idle": &both, "m#ready": &succeededOnly, "other#dup": &sameType}
	probeOf := func(m, p string) *kruiseappsv1alpha1.PodContainerProbe { return probes[m+"#"+p] }
	state := func(name string, s kruiseappsv1alpha1.ProbeState, msg string) kruiseappsv1alpha1.ContainerProbeState {
		return kruiseappsv1alpha1.ContainerProbeState{Name: name, State: s, Message: msg, LastProbeTime: now, LastTransitionTime: now}
	}
	cond := func(s corev1.ConditionStatus, msg string) corev1.PodCondition {
		return corev1.PodCondition{Type: "game.kruise.io/idle", Status: s, Message: msg, LastProbeTime: now, LastTransitionTime: now}
	}
	str := func(s string) *string { return &s }
	marked := func(p *corev1.Pod) {
		p.Labels = map[string]string{"idle": "true", "warm": "yes", "app": "game"}
		p.Annotations = map[string]string{"controller.kubernetes.io/pod-deletion-cost": "-10"}
		p.Status.Conditions = append(p.Status.Conditions, cond(corev1.ConditionTrue, "idle"))
	}
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		states []kruiseappsv1alpha1.ContainerProbeState
		want   PodUpdate
	}{
		{"succeeded marks and sets the condition True", pod("a", "n1"),
			[]kruiseappsv1alpha1.ContainerProbeState{state("m#idle", kruiseappsv1alpha1.ProbeSucceeded, "idle"), state("m#ready", kruiseappsv1alpha1.ProbeSucceeded, "")},
			PodUpdate{Labels: map[string]*string{"idle": str("true"), "warm": str("yes")},
				Annotations: map[string]*string{"controller.kubernetes.io/pod-deletion-cost": str("-10")},
				Conditions:  []corev1.PodCondition{cond(corev1.ConditionTrue, "idle")}, Marked: []string{"m#idle", "m#ready"}}},
		{"nothing changes on a pod marked already", pod("a", "n1", marked),
			[]kruiseappsv1alpha1.ContainerProbeState{state("m#idle", kruiseappsv1alpha1.ProbeSucceeded, "idle"), state("m#ready", kruiseappsv1alpha1.ProbeSucceeded, "")},
			PodUpdate{}},
		{"failed: the other state's keys go, its own are set, the condition False", pod("a", "n1", marked),
			[]kruiseappsv1alpha1.ContainerProbeState{state("m#idle", kruiseappsv1alpha1.ProbeFailed, "busy"), state("m#ready", kruiseappsv1alpha1.ProbeFailed, "")},
			PodUpdate{Labels: map[string]*string{"idle": str("false"), "warm": nil},
				Annotations: map[string]*string{"controller.kubernetes.io/pod-deletion-cost": nil},
				Conditions:  []corev1.PodCondition{cond(corev1.ConditionFalse, "busy")}, Marked: []string{"m#idle", "m#ready"}}},
		{"unknown removes every policy's keys, the condition False", pod("a", "n1", marked),
			[]kruiseappsv1alpha1.ContainerProbeState{state("m#idle", kruiseappsv1alpha1.ProbeUnknown, "")},
			PodUpdate{Labels: map[string]*string{"idle": nil}, Annotations: map[string]*string{"controller.kubernetes.io/pod-deletion-cost": nil},
				Conditions: []corev1.PodCondition{cond(corev1.ConditionFalse, "")}, Marked: []string{"m#idle"}}},
		{"a new message rewrites the condition", pod("a", "n1", marked),
			[]kruiseappsv1alpha1.ContainerProbeState{state("m#idle", kruiseappsv1alpha1.ProbeSucceeded, "idle for 5m")},
			PodUpdate{Conditions: []corev1.PodCondition{cond(corev1.ConditionTrue, "idle for 5m")}}},
		{"results without a state, a marker or probe gone, or a bad name change nothing", pod("a", "n1"),
			[]kruiseappsv1alpha1.ContainerProbeState{state("m#idle", "", ""), state("gone#idle", kruiseappsv1alpha1.ProbeSucceeded, ""),
				state("m#gone", kruiseappsv1alpha1.ProbeSucceeded, ""), state("no-separator", kruiseappsv1alpha1.ProbeSucceeded, "")},
			PodUpdate{}},
		{"the first result naming a condition type wins", pod("a", "n1"),
			[]kruiseappsv1alpha1.ContainerProbeState{state("m#idle", kruiseappsv1alpha1.ProbeSucceeded, "idle"), state("other#dup", kruiseappsv1alpha1.ProbeFailed, "")},
			PodUpdate{Labels: map[string]*string{"idle": str("true")},
				Annotations: map[string]*string{"controller.kubernetes.io/pod-deletion-cost": str("-10")},
				Conditions:  []corev1.PodCondition{cond(corev1.ConditionTrue, "idle")}, Marked: []string{"m#idle"},
				Conflicts: []Conflict{{Type: "game.kruise.io/idle", Probe: "other#dup", Winner: "m#idle"}}}},
	} {
		got := ForPod(tc.pod, kruiseappsv1alpha1.PodProbeStatus{ProbeStates: tc.states}, probeOf)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.name, diff)
		}
		if got.Empty() != (len(tc.want.Labels)+len(tc.want.Annotations)+len(tc.want.Conditions) == 0) {
			t.Errorf("%s: Empty = %v", tc.name, got.Empty())
		}
	}
}

func TestPatches(t *testing.T) {
	v := "true"
	u := PodUpdate{Labels: map[string]*string{"idle": &v, "warm": nil},
		Conditions: []corev1.PodCondition{{Type: "game.kruise.io/idle", Status: corev1.ConditionTrue, Message: "idle"}}}
	meta, err := u.MetadataPatch()
	if err != nil || string(meta) != `{"metadata":{"labels":{"idle":"true","warm":null}}}` {
		t.Errorf("metadata patch %s, %v", meta, err)
	}
	conds, err := u.ConditionsPatch()
	want := `{"status":{"conditions":[{"type":"game.kruise.io/idle","status":"True","lastProbeTime":null,"lastTransitionTime":null,"message":"idle"}]}}`
	if err != nil || string(conds) != want {
		t.Errorf("conditions patch %s, %v", conds, err)
	}
	if p, err := (PodUpdate{}).MetadataPatch(); p != nil || err != nil {
		t.Errorf("an empty update's metadata patch %s, %v", p, err)
	}
	if p, err := (PodUpdate{}).ConditionsPatch(); p != nil || err != nil {
		t.Errorf("an empty update's conditions patch %s, %v", p, err)
	}
}

func TestSkippedSaysWhy(t *testing.T) {
	s := Skipped{Pod: "ns/a", Probe: "port", Err: errors.New(`container app: no port named "grpc"`)}
	if got := s.String(); got != `probe port of pod ns/a: container app: no port named "grpc"` {
		t.Errorf("String = %q", got)
	}
}
