package plan

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	set     = "web"
	current = "web-old"
	updated = "web-new"
)

// pod is set's pod of ordinal n on revision rev, running and Ready (for a minute) unless changed.
func pod(n int32, rev string, changes ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(set, n), Labels: map[string]string{
			RevisionLabel: rev, appsv1.StatefulSetPodNameLabel: PodName(set, n), appsv1.PodIndexLabel: strconv.Itoa(int(n)),
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))},
		}},
	}
	for _, c := range changes {
		c(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

func failed(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }

func terminating(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} }

func readySince(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-d)) }
}

func state(s kruiseappspub.LifecycleStateType) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels[kruiseappspub.LifecycleStateKey] = string(s) }
}

func labelled(k, v string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Labels[k] = v } }

func specifiedDelete(p *corev1.Pod) { p.Labels[kruiseappsv1alpha1.SpecifiedDeleteKey] = "true" }

func pods(ps ...*corev1.Pod) []*corev1.Pod { return ps }

// input is a Parallel set of replicas pods mid-update, with the given strategy changes.
func input(replicas int32, ps []*corev1.Pod, changes ...func(*Strategy)) Input {
	st := Strategy{Replicas: replicas, Parallel: true, MaxUnavailable: 1}
	for _, c := range changes {
		c(&st)
	}
	return Input{Now: now, Name: set, Strategy: st, UpdateRevision: updated, CurrentRevision: current, Pods: ps, IndexLabel: true}
}

func names(ps []*corev1.Pod) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func deletions(ds []Deletion) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.Pod.Name+":"+string(d.Reason))
	}
	return out
}

func creations(cs []Creation) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, PodName(set, c.Ordinal)+"@"+c.Revision)
	}
	return out
}
