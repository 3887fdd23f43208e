package containerrecreate

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestGraceSeconds(t *testing.T) {
	pod := func(g *int64) *corev1.Pod { return &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: g}} }
	cases := []struct {
		name     string
		strategy *int64
		pod      *corev1.Pod
		want     int64
	}{
		{name: "the request's", strategy: ptr.To[int64](5), pod: pod(ptr.To[int64](60)), want: 5},
		{name: "zero from the request", strategy: ptr.To[int64](0), pod: pod(ptr.To[int64](60)), want: 0},
		{name: "the pod's", pod: pod(ptr.To[int64](60)), want: 60},
		{name: "the default", pod: pod(nil), want: defaultGraceSeconds},
	}
	for _, tc := range cases {
		c := request(func(c *crr) { c.Spec.Strategy.TerminationGracePeriodSeconds = tc.strategy })
		if got := graceSeconds(c, tc.pod); got != tc.want {
			t.Errorf("%s: graceSeconds = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestRemainingGrace(t *testing.T) {
	cases := []struct {
		grace   int64
		elapsed time.Duration
		want    int64
	}{
		{grace: 0, elapsed: 0, want: 0},
		{grace: 30, elapsed: 0, want: 30},
		{grace: 30, elapsed: 10500 * time.Millisecond, want: 20},
		{grace: 30, elapsed: time.Minute, want: minGraceSeconds},
		{grace: 1, elapsed: 5 * time.Second, want: 1},
	}
	for _, tc := range cases {
		if got := remainingGrace(tc.grace, tc.elapsed); got != tc.want {
			t.Errorf("remainingGrace(%d, %v) = %d, want %d", tc.grace, tc.elapsed, got, tc.want)
		}
	}
}
