// Package updatesort orders the pods a workload is about to update, the way upstream OpenKruise does for
// CloneSet, Advanced StatefulSet and SidecarSet: spec.updateStrategy.priorityStrategy (weight or order
// terms) and scatterStrategy.
package updatesort

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// Priority compares two pods by a priority strategy: negative when a goes first. Weight terms sum the
// weights of the selectors a pod matches (higher first); order terms compare the first key either pod has
// (a pod with the key before one without; then the value's trailing integer, higher first).
type Priority func(a, b *corev1.Pod) int

// NewPriority builds the comparison of a strategy; a nil or empty strategy treats every pod alike. Invalid
// selectors match nothing (the webhook rejects them).
func NewPriority(s *kruiseappspub.UpdatePriorityStrategy) Priority {
	switch {
	case s == nil:
		return func(_, _ *corev1.Pod) int { return 0 }
	case len(s.WeightPriority) > 0:
		return byWeight(s.WeightPriority)
	default:
		return byOrder(s.OrderPriority)
	}
}

func byWeight(terms []kruiseappspub.UpdatePriorityWeightTerm) Priority {
	selectors := make([]labels.Selector, len(terms))
	for i := range terms {
		sel, err := metav1.LabelSelectorAsSelector(&terms[i].MatchSelector)
		if err != nil {
			sel = labels.Nothing()
		}
		selectors[i] = sel
	}
	weight := func(p *corev1.Pod) int64 {
		var sum int64
		for i, sel := range selectors {
			if sel.Matches(labels.Set(p.Labels)) {
				sum += int64(terms[i].Weight)
			}
		}
		return sum
	}
	return func(a, b *corev1.Pod) int { return cmp.Compare(weight(b), weight(a)) }
}

func byOrder(terms []kruiseappspub.UpdatePriorityOrderTerm) Priority {
	return func(a, b *corev1.Pod) int {
		for _, t := range terms {
			va, okA := a.Labels[t.OrderedKey]
			vb, okB := b.Labels[t.OrderedKey]
			switch {
			case okA && !okB:
				return -1
			case okB && !okA:
				return 1
			case okA && okB:
				return cmp.Compare(trailingInt(vb), trailingInt(va))
			}
		}
		return 0
	}
}

var trailingDigits = regexp.MustCompile(`\d+$`)

// trailingInt is the integer a label value ends with, 0 when none (or too large).
func trailingInt(v string) int64 {
	n, err := strconv.ParseInt(trailingDigits.FindString(v), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// Stable sorts pods by the given comparisons in order, keeping the input order among equals.
func Stable(pods []*corev1.Pod, by ...func(a, b *corev1.Pod) int) {
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		for _, f := range by {
			if c := f(a, b); c != 0 {
				return c
			}
		}
		return 0
	})
}
