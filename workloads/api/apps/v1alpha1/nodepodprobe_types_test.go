package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestProbeStateIsEqualPodConditionStatus(t *testing.T) {
	tests := []struct {
		state  ProbeState
		status corev1.ConditionStatus
		want   bool
	}{
		{ProbeSucceeded, corev1.ConditionTrue, true},
		{ProbeSucceeded, corev1.ConditionFalse, false},
		{ProbeSucceeded, corev1.ConditionUnknown, false},
		{ProbeFailed, corev1.ConditionFalse, true},
		{ProbeFailed, corev1.ConditionTrue, false},
		{ProbeFailed, corev1.ConditionUnknown, false},
		{ProbeUnknown, corev1.ConditionUnknown, true},
		{ProbeUnknown, "", true},
		{ProbeUnknown, corev1.ConditionTrue, false},
		{ProbeUnknown, corev1.ConditionFalse, false},
		{"", corev1.ConditionUnknown, false},
	}
	for _, tt := range tests {
		if got := tt.state.IsEqualPodConditionStatus(tt.status); got != tt.want {
			t.Errorf("ProbeState(%q).IsEqualPodConditionStatus(%q) = %v, want %v", tt.state, tt.status, got, tt.want)
		}
	}
}

func TestContainerProbeNameRoundTrip(t *testing.T) {
	tests := []struct {
		marker, probe string
	}{
		{"game-server-probe", "Idle"},
		{"m", "probe#with#hashes"},
	}
	for _, tt := range tests {
		name := ContainerProbeName(tt.marker, tt.probe)
		marker, probe, ok := ParseContainerProbeName(name)
		if !ok || marker != tt.marker || probe != tt.probe {
			t.Errorf("ParseContainerProbeName(%q) = (%q, %q, %v), want (%q, %q, true)",
				name, marker, probe, ok, tt.marker, tt.probe)
		}
	}
	if got := ContainerProbeName("game-server-probe", "Idle"); got != "game-server-probe#Idle" {
		t.Errorf("ContainerProbeName = %q, want the upstream form %q", got, "game-server-probe#Idle")
	}
}

func TestParseContainerProbeNameRejectsForeignNames(t *testing.T) {
	for _, name := range []string{"", "no-separator", "#probe", "marker#"} {
		if marker, probe, ok := ParseContainerProbeName(name); ok || marker != "" || probe != "" {
			t.Errorf("ParseContainerProbeName(%q) = (%q, %q, %v), want (\"\", \"\", false)", name, marker, probe, ok)
		}
	}
}
