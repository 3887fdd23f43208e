package module

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func answering(ok bool, err error, calls *int) InPlaceUpdateCheck {
	return func(context.Context, *corev1.Pod) (bool, error) {
		*calls++
		return ok, err
	}
}

func TestInPlaceUpdateChecks(t *testing.T) {
	broken := errors.New("budget unreadable")
	cases := []struct {
		name      string
		answers   []bool
		err       error // of the second check
		want      bool
		wantCalls []int
	}{
		{name: "no check allows", want: true},
		{name: "every check allows", answers: []bool{true, true}, want: true, wantCalls: []int{1, 1}},
		{name: "the first refusal stops", answers: []bool{false, true}, wantCalls: []int{1, 0}},
		{name: "an error refuses", answers: []bool{true, true}, err: broken, wantCalls: []int{1, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &InPlaceUpdateChecks{}
			calls := make([]int, len(tc.answers))
			for i, ok := range tc.answers {
				var err error
				if i == 1 {
					err = tc.err
				}
				c.Add(answering(ok, err, &calls[i]))
			}
			ok, err := c.Allow(context.Background(), &corev1.Pod{})
			if ok != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("Allow = %v, %v; want %v, %v", ok, err, tc.want, tc.err)
			}
			for i, n := range calls {
				if n != tc.wantCalls[i] {
					t.Errorf("check %d ran %d times, want %d", i, n, tc.wantCalls[i])
				}
			}
		})
	}
}

// A module set up without the hook (tests, a manager without budgets) allows every update.
func TestNilInPlaceUpdateChecksAllow(t *testing.T) {
	var c *InPlaceUpdateChecks
	if ok, err := c.Allow(context.Background(), &corev1.Pod{}); !ok || err != nil {
		t.Errorf("Allow = %v, %v", ok, err)
	}
}
