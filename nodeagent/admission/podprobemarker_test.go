package admission

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// gameMarker is upstream's documented example: an exec probe whose result marks game servers idle.
func gameMarker() *kruiseappsv1alpha1.PodProbeMarker {
	return &kruiseappsv1alpha1.PodProbeMarker{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "game-server-probe"},
		Spec: kruiseappsv1alpha1.PodProbeMarkerSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "game-server"}},
			Probes: []kruiseappsv1alpha1.PodContainerProbe{{
				Name: "Idle", ContainerName: "game-server",
				Probe: kruiseappsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{
					ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/home/game/idle.sh"}}},
					InitialDelaySeconds: 10, TimeoutSeconds: 3, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
				}},
				PodConditionType: "game.kruise.io/idle",
				MarkerPolicy: []kruiseappsv1alpha1.ProbeMarkerPolicy{
					{State: kruiseappsv1alpha1.ProbeSucceeded, Labels: map[string]string{"gameserver-idle": "true"},
						Annotations: map[string]string{"controller.kubernetes.io/pod-deletion-cost": "-10"}},
					{State: kruiseappsv1alpha1.ProbeFailed, Labels: map[string]string{"gameserver-idle": "false"},
						Annotations: map[string]string{"controller.kubernetes.io/pod-deletion-cost": "10"}},
				},
			}},
		},
	}
}

func handler(h corev1.ProbeHandler) func(*kruiseappsv1alpha1.PodProbeMarker) {
	return func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].Probe.ProbeHandler = h }
}

func httpGet(change func(*corev1.HTTPGetAction)) func(*kruiseappsv1alpha1.PodProbeMarker) {
	h := &corev1.HTTPGetAction{Path: "/idle", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}
	change(h)
	return handler(corev1.ProbeHandler{HTTPGet: h})
}

func secondProbe(change func(*kruiseappsv1alpha1.PodContainerProbe)) func(*kruiseappsv1alpha1.PodProbeMarker) {
	return func(m *kruiseappsv1alpha1.PodProbeMarker) {
		p := *m.Spec.Probes[0].DeepCopy()
		p.Name, p.PodConditionType = "Ready-check", "game.kruise.io/ready"
		change(&p)
		m.Spec.Probes = append(m.Spec.Probes, p)
	}
}

// Every rule, each refusing with the field it names.
func TestValidatePodProbeMarker(t *testing.T) {
	tcp := func(port intstr.IntOrString, host string) func(*kruiseappsv1alpha1.PodProbeMarker) {
		return handler(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port, Host: host}})
	}
	for _, tc := range []struct {
		name   string
		change func(*kruiseappsv1alpha1.PodProbeMarker)
		want   []string // substrings of the errors, in order; none: accepted
	}{
		{"upstream's example", func(*kruiseappsv1alpha1.PodProbeMarker) {}, nil},
		{"an httpGet probe on a named port", httpGet(func(*corev1.HTTPGetAction) {}), nil},
		{"a tcpSocket probe on a number", tcp(intstr.FromInt32(8080), ""), nil},
		{"a condition type alone", func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].MarkerPolicy = nil }, nil},
		{"a policy alone", func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].PodConditionType = "" }, nil},

		{"no selector", func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Selector = nil }, []string{"spec.selector: Required value"}},
		{"an empty selector", func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"spec.selector: Invalid value"}},
		{"a selector that does not parse", func(m *kruiseappsv1alpha1.PodProbeMarker) {
			m.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}
		}, []string{"spec.selector.matchExpressions[0].operator: Invalid value"}},
		{"no probes", func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Probes = nil }, []string{"spec.probes: Required value"}},
		{"a probe without a name", func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].Name = "" },
			[]string{"spec.probes[0].name: Required value"}},
		{"a name with '#'", func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].Name = "a#b" },
			[]string{"spec.probes[0].name: Invalid value: \"a#b\": may not contain '#'"}},
		{"a name the kubelet's condition has", func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].Name = "Initialized" },
			[]string{"spec.probes[0].name: Invalid value: \"Initialized\""}},
		{"a name twice", secondProbe(func(p *kruiseappsv1alpha1.PodContainerProbe) { p.Name = "Idle" }),
			[]string{"spec.probes[1].name: Duplicate value: \"Idle\""}},
		{"no container", func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].ContainerName = "" },
			[]string{"spec.probes[0].containerName: Required value"}},
		{"neither condition type nor policy", func(m *kruiseappsv1alpha1.PodProbeMarker) {
			m.Spec.Probes[0].PodConditionType, m.Spec.Probes[0].MarkerPolicy = "", nil
		}, []string{"spec.probes[0]: Required value: podConditionType or markerPolicy"}},

		{"no handler", handler(corev1.ProbeHandler{}), []string{"spec.probes[0].probe: Required value: one of exec, httpGet and tcpSocket"}},
		{"two handlers", handler(corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}},
			TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}),
			[]string{"spec.probes[0].probe.tcpSocket: Forbidden: may not specify more than 1 handler type"}},
		{"a gRPC probe", handler(corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}}),
			[]string{"spec.probes[0].probe.grpc: Forbidden"}},
		{"exec without a command", handler(corev1.ProbeHandler{Exec: &corev1.ExecAction{}}),
			[]string{"spec.probes[0].probe.exec.command: Required value"}},
		{"httpGet without a path", httpGet(func(h *corev1.HTTPGetAction) { h.Path = "" }),
			[]string{"spec.probes[0].probe.httpGet.path: Required value"}},
		{"httpGet with a path that does not parse", httpGet(func(h *corev1.HTTPGetAction) { h.Path = "path%notvalid" }),
			[]string{"spec.probes[0].probe.httpGet.path: Invalid value"}},
		{"httpGet without a scheme", httpGet(func(h *corev1.HTTPGetAction) { h.Scheme = "" }),
			[]string{"spec.probes[0].probe.httpGet.scheme: Unsupported value: \"\""}},
		{"httpGet to another host", httpGet(func(h *corev1.HTTPGetAction) { h.Host = "169.254.169.254" }),
			[]string{"spec.probes[0].probe.httpGet.host: Forbidden"}},
		{"httpGet with a Host header", httpGet(func(h *corev1.HTTPGetAction) { h.HTTPHeaders = []corev1.HTTPHeader{{Name: "host", Value: "x"}} }),
			[]string{"spec.probes[0].probe.httpGet.httpHeaders[0].name: Forbidden"}},
		{"httpGet with a header name that is not one", httpGet(func(h *corev1.HTTPGetAction) {
			h.HTTPHeaders = []corev1.HTTPHeader{{Name: "Bad Header:", Value: "x"}}
		}), []string{"spec.probes[0].probe.httpGet.httpHeaders[0].name: Invalid value"}},
		{"httpGet on port 0", httpGet(func(h *corev1.HTTPGetAction) { h.Port = intstr.FromInt32(0) }),
			[]string{"spec.probes[0].probe.httpGet.port: Invalid value: 0"}},
		{"tcpSocket on a port name that is not one", tcp(intstr.FromString("aaaaabbbbbcccccd"), ""),
			[]string{"spec.probes[0].probe.tcpSocket.port: Invalid value"}},
		{"tcpSocket to another host", tcp(intstr.FromInt32(80), "127.0.0.1"), []string{"spec.probes[0].probe.tcpSocket.host: Forbidden"}},
		{"negative numbers", func(m *kruiseappsv1alpha1.PodProbeMarker) {
			p := &m.Spec.Probes[0].Probe
			p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold = -1, -1, -1, -1, -1
		}, []string{"initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0", "timeoutSeconds: Invalid", "periodSeconds: Invalid",
			"successThreshold: Invalid", "failureThreshold: Invalid"}},

		{"a condition type that is no qualified name", func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].PodConditionType = "#5invalid" },
			[]string{"spec.probes[0].podConditionType: Invalid value: \"#5invalid\""}},
		{"the kubelet's condition type", func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].PodConditionType = "Ready" },
			[]string{"spec.probes[0].podConditionType: Invalid value: \"Ready\": may not be a pod condition type the kubelet or Kruise sets"}},
		{"Kruise's readiness gate", func(m *kruiseappsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].PodConditionType = "KruisePodReady" },
			[]string{"spec.probes[0].podConditionType: Invalid value: \"KruisePodReady\""}},
		{"one condition type twice", secondProbe(func(p *kruiseappsv1alpha1.PodContainerProbe) { p.PodConditionType = "game.kruise.io/idle" }),
			[]string{"spec.probes[1].podConditionType: Duplicate value"}},
		{"a policy for Unknown", func(m *kruiseappsv1alpha1.PodProbeMarker) {
			m.Spec.Probes[0].MarkerPolicy[1].State = kruiseappsv1alpha1.ProbeUnknown
		},
			[]string{"spec.probes[0].markerPolicy[1].state: Unsupported value: \"Unknown\""}},
		{"a state twice", func(m *kruiseappsv1alpha1.PodProbeMarker) {
			m.Spec.Probes[0].MarkerPolicy[1].State = kruiseappsv1alpha1.ProbeSucceeded
		},
			[]string{"spec.probes[0].markerPolicy[1].state: Duplicate value: \"Succeeded\""}},
		{"a policy that marks nothing", func(m *kruiseappsv1alpha1.PodProbeMarker) {
			m.Spec.Probes[0].MarkerPolicy[1].Labels, m.Spec.Probes[0].MarkerPolicy[1].Annotations = nil, nil
		}, []string{"spec.probes[0].markerPolicy[1]: Required value"}},
		{"an invalid label", func(m *kruiseappsv1alpha1.PodProbeMarker) {
			m.Spec.Probes[0].MarkerPolicy[0].Labels = map[string]string{"server-/$healthy": "true"}
		}, []string{"spec.probes[0].markerPolicy[0].labels: Invalid value: \"server-/$healthy\": prefix part", "name part"}},
		{"an invalid label value", func(m *kruiseappsv1alpha1.PodProbeMarker) {
			m.Spec.Probes[0].MarkerPolicy[0].Labels = map[string]string{"idle": "not a value"}
		}, []string{"spec.probes[0].markerPolicy[0].labels: Invalid value: \"not a value\""}},
		{"an invalid annotation", func(m *kruiseappsv1alpha1.PodProbeMarker) {
			m.Spec.Probes[0].MarkerPolicy[0].Annotations = map[string]string{"bad key!": "x"}
		}, []string{"spec.probes[0].markerPolicy[0].annotations: Invalid value: \"bad key!\""}},
	} {
		m := gameMarker()
		tc.change(m)
		errs := ValidatePodProbeMarker(m, nil)
		checkErrors(t, tc.name, errs.ToAggregate(), tc.want)
		if len(errs) != len(tc.want) {
			t.Errorf("%s: %d errors, want %d: %v", tc.name, len(errs), len(tc.want), errs)
		}
	}
}

func checkErrors(t *testing.T, name string, err error, want []string) {
	t.Helper()
	if err == nil {
		if len(want) > 0 {
			t.Errorf("%s: accepted, want %q", name, want)
		}
		return
	}
	msg := err.Error()
	if len(want) == 0 {
		t.Errorf("%s: refused: %v", name, msg)
		return
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: %q does not say %q", name, msg, w)
		}
	}
}

func TestValidatePodProbeMarkerUpdate(t *testing.T) {
	old := gameMarker()
	edited := gameMarker()
	edited.Spec.Probes[0].Probe.PeriodSeconds = 30
	checkErrors(t, "probes edited", ValidatePodProbeMarker(edited, old).ToAggregate(), nil)

	moved := gameMarker()
	moved.Spec.Selector.MatchLabels["app"] = "other"
	checkErrors(t, "selector changed", ValidatePodProbeMarker(moved, old).ToAggregate(), []string{"spec.selector: Invalid value", "field is immutable"})

	// A marker stored before a rule existed can still be changed: only new errors count.
	stored := gameMarker()
	stored.Spec.Probes[0].PodConditionType = "Ready"
	storedEdited := stored.DeepCopy()
	storedEdited.Spec.Probes[0].Probe.PeriodSeconds = 30
	checkErrors(t, "an old error kept", ValidatePodProbeMarker(storedEdited, stored).ToAggregate(), nil)

	if errs := ValidatePodProbeMarker(nil, nil); len(errs) != 1 {
		t.Errorf("no marker: %v", errs)
	}
}
