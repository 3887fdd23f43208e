package eventbudget

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// recorded is what the wrapped recorder was asked to record.
type recorded struct {
	regardingRV string
	related     bool
	reason      string
}

type capture struct{ got []recorded }

func (c *capture) Eventf(regarding, related runtime.Object, _, reason, _, _ string, _ ...any) {
	c.got = append(c.got, recorded{regardingRV: regarding.(*corev1.ConfigMap).ResourceVersion, related: related != nil, reason: reason})
}

func owner(uid string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID("uid-" + uid), ResourceVersion: "7"}}
}

var pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}

func TestRecorder(t *testing.T) {
	type event struct {
		owner   string
		reason  string
		related bool
		after   time.Duration
	}
	cases := []struct {
		name   string
		events []event
		want   []recorded
	}{
		{
			name:   "within the burst every event keeps its pod and its owner's version",
			events: []event{{"a", "Create", true, 0}, {"a", "Create", true, 0}},
			want:   []recorded{{"7", true, "Create"}, {"7", true, "Create"}},
		},
		{
			name:   "past the burst the pod and the version are dropped",
			events: []event{{"a", "Create", true, 0}, {"a", "Create", true, 0}, {"a", "Create", true, 0}},
			want:   []recorded{{"7", true, "Create"}, {"7", true, "Create"}, {"", false, "Create"}},
		},
		{
			name:   "each reason and each owner has its own budget",
			events: []event{{"a", "Create", true, 0}, {"a", "Create", true, 0}, {"a", "Delete", true, 0}, {"b", "Create", true, 0}},
			want:   []recorded{{"7", true, "Create"}, {"7", true, "Create"}, {"7", true, "Delete"}, {"7", true, "Create"}},
		},
		{
			name:   "events without a pod are never changed nor counted",
			events: []event{{"a", "Limited", false, 0}, {"a", "Limited", false, 0}, {"a", "Limited", false, 0}, {"a", "Limited", true, 0}},
			want:   []recorded{{"7", false, "Limited"}, {"7", false, "Limited"}, {"7", false, "Limited"}, {"7", true, "Limited"}},
		},
		{
			name:   "the budget comes back after the window",
			events: []event{{"a", "Create", true, 0}, {"a", "Create", true, 0}, {"a", "Create", true, time.Minute}, {"a", "Create", true, time.Minute}},
			want:   []recorded{{"7", true, "Create"}, {"7", true, "Create"}, {"", false, "Create"}, {"7", true, "Create"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &capture{}
			clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
			r := NewWithClock(c, 2, 90*time.Second, clk)
			for _, e := range tc.events {
				clk.SetTime(clk.Now().Add(e.after))
				var related runtime.Object
				if e.related {
					related = pod
				}
				o := owner(e.owner)
				r.Eventf(o, related, corev1.EventTypeNormal, e.reason, "Act", "note")
				if o.ResourceVersion != "7" {
					t.Fatalf("the caller's object was changed")
				}
			}
			if len(c.got) != len(tc.want) {
				t.Fatalf("recorded %v, want %v", c.got, tc.want)
			}
			for i := range tc.want {
				if c.got[i] != tc.want[i] {
					t.Errorf("event %d: recorded %+v, want %+v", i, c.got[i], tc.want[i])
				}
			}
		})
	}
}

func TestPruneKeepsLiveTallies(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	r := NewWithClock(&capture{}, 1, time.Minute, clk)
	for i := range pruneAbove {
		r.Eventf(owner(fmt.Sprint("owner-", i)), pod, "", "Create", "", "")
	}
	clk.SetTime(clk.Now().Add(30 * time.Second))
	r.Eventf(owner("fresh"), pod, "", "Create", "", "")
	clk.SetTime(clk.Now().Add(40 * time.Second))
	r.Eventf(owner("newest"), pod, "", "Create", "", "")
	if len(r.tallies) != 2 {
		t.Fatalf("after pruning %d tallies are kept, want the 2 of the last minute", len(r.tallies))
	}
}
