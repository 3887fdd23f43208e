package nativedaemonset

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var now = time.Unix(1000, 0)

// pod is a DaemonSet pod named name on revision; ready says since when it is ready (negative: not ready).
func pod(name, revision string, readyFor time.Duration, created int64) corev1.Pod {
	cond := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(now.Add(-readyFor))}
	if readyFor < 0 {
		cond.Status = corev1.ConditionFalse
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(time.Unix(created, 0)),
			Labels: map[string]string{"controller-revision-hash": revision}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{cond}},
	}
}

const ready, notReady = time.Hour, -time.Second

func TestChoosePodsToDelete(t *testing.T) {
	tests := []struct {
		name       string
		c          choice
		want       []string
		wantMore   bool
		minReadyTo int32
	}{
		{
			name: "first batch of four: one pod",
			c: choice{Pods: []corev1.Pod{pod("a", "old", ready, 1), pod("b", "old", ready, 2), pod("c", "old", ready, 3),
				pod("d", "old", ready, 4)}, Desired: 4, Partition: 3, MaxUnavailable: 1},
			want: []string{"a"},
		},
		{
			name: "batch reached: nothing",
			c: choice{Pods: []corev1.Pod{pod("a", "new", ready, 1), pod("b", "old", ready, 2)},
				Desired: 2, Partition: 1, MaxUnavailable: 1},
		},
		{
			name: "not-ready old pods first, and they cost no budget",
			c: choice{Pods: []corev1.Pod{pod("a", "old", ready, 1), pod("b", "old", notReady, 2), pod("c", "old", notReady, 3),
				pod("d", "old", ready, 4)}, Desired: 4, Partition: 0, MaxUnavailable: 3},
			want: []string{"b", "c", "a"}, wantMore: true,
		},
		{
			name: "an unavailable updated pod uses the budget",
			c: choice{Pods: []corev1.Pod{pod("a", "new", notReady, 1), pod("b", "old", ready, 2), pod("c", "old", ready, 3)},
				Desired: 3, Partition: 0, MaxUnavailable: 1},
			wantMore: true,
		},
		{
			name: "a node without a pod uses the budget",
			c: choice{Pods: []corev1.Pod{pod("b", "old", ready, 2), pod("c", "old", ready, 3)},
				Desired: 3, Partition: 0, MaxUnavailable: 2},
			want: []string{"b"}, wantMore: true,
		},
		{
			name: "maxUnavailable 2 takes two at a time",
			c: choice{Pods: []corev1.Pod{pod("a", "old", ready, 1), pod("b", "old", ready, 2), pod("c", "old", ready, 3)},
				Desired: 3, Partition: 0, MaxUnavailable: 2},
			want: []string{"a", "b"}, wantMore: true,
		},
		{
			name: "ready but not for minReadySeconds is unavailable",
			c: choice{Pods: []corev1.Pod{pod("a", "new", 5*time.Second, 1), pod("b", "old", ready, 2)},
				Desired: 2, Partition: 0, MaxUnavailable: 1, MinReadySeconds: 10},
			wantMore: true,
		},
		{
			name: "same age: by name",
			c: choice{Pods: []corev1.Pod{pod("z", "old", ready, 1), pod("y", "old", ready, 1)},
				Desired: 2, Partition: 1, MaxUnavailable: 1},
			want: []string{"y"},
		},
		{
			name: "several old revisions all count as old",
			c: choice{Pods: []corev1.Pod{pod("a", "older", ready, 1), pod("b", "old", notReady, 2)},
				Desired: 2, Partition: 0, MaxUnavailable: 1},
			want: []string{"b"}, wantMore: true,
		},
		{
			name: "partition above desired: nothing",
			c:    choice{Pods: []corev1.Pod{pod("a", "old", ready, 1)}, Desired: 1, Partition: 5, MaxUnavailable: 1},
		},
		{
			name: "a pod deleted for the batch and not yet replaced counts: maxUnavailable 3 deletes no second one",
			c: choice{Pods: []corev1.Pod{pod("b", "old", ready, 2), pod("c", "old", ready, 3)}, Replacing: 1,
				Desired: 3, Partition: 2, MaxUnavailable: 3},
		},
		{
			name: "no pods at all",
			c:    choice{Desired: 2, Partition: 0, MaxUnavailable: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Revision, tt.c.Now = "new", now
			doomed, more := choosePodsToDelete(tt.c)
			var got []string
			for _, p := range doomed {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("deleted pods (-want +got):\n%s", diff)
			}
			if more != tt.wantMore {
				t.Errorf("more = %v, want %v", more, tt.wantMore)
			}
		})
	}
}

// A deleted pod counts as on its way to the batch until its node runs a pod of the batch revision, even
// once the cache no longer lists it: otherwise a batch of one with maxUnavailable 3 deleted every pod.
func TestDeletionsSettle(t *testing.T) {
	d := newDeletions()
	ds := types.NamespacedName{Namespace: "ns", Name: "agent"}
	a, gone := onNode(pod("a", "old", ready, 1), "n1"), onNode(pod("gone", "old", ready, 0), "n0")
	d.expect(ds, &a, now)
	d.expect(ds, &gone, now)
	pods := []corev1.Pod{a, onNode(pod("b", "old", ready, 2), "n2")}
	got, replacing := d.settle(ds, pods, "new", now)
	if !slices.Equal(names(got), []string{"b"}) || replacing != 2 {
		t.Errorf("while both deletions wait for their replacement: pods %v, replacing %d", names(got), replacing)
	}
	pods = append(pods[1:], onNode(pod("a2", "new", notReady, 5), "n1"))
	got, replacing = d.settle(ds, pods, "new", now)
	if !slices.Equal(names(got), []string{"b", "a2"}) || replacing != 1 {
		t.Errorf("with a's node replaced: pods %v, replacing %d", names(got), replacing)
	}
	if _, replacing = d.settle(ds, pods, "new", now.Add(2*deletionTTL)); replacing != 0 {
		t.Errorf("after the deletion expired: replacing %d", replacing)
	}
}

func onNode(p corev1.Pod, node string) corev1.Pod {
	p.Spec.NodeName = node
	return p
}

func names(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
