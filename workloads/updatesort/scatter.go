package updatesort

import (
	corev1 "k8s.io/api/core/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// Scatter reorders pods so that the pods matching each scatter term are spread evenly through the order
// instead of being updated together. Terms with more matching pods are placed first; pods matching no term
// keep their relative order in the remaining slots. pods should already be sorted by priority.
func Scatter(pods []*corev1.Pod, terms kruiseappspub.UpdateScatterStrategy) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pods...)
	for _, term := range termsByMatches(out, terms) {
		out = spread(out, term)
	}
	return out
}

func matches(p *corev1.Pod, t kruiseappspub.UpdateScatterTerm) bool {
	v, ok := p.Labels[t.Key]
	return ok && (v == t.Value || t.Value == "*")
}

// termsByMatches returns the terms with at least two matching pods, most matches first.
func termsByMatches(pods []*corev1.Pod, terms kruiseappspub.UpdateScatterStrategy) []kruiseappspub.UpdateScatterTerm {
	count := map[kruiseappspub.UpdateScatterTerm]int{}
	var out []kruiseappspub.UpdateScatterTerm
	for _, t := range terms {
		for _, p := range pods {
			if matches(p, t) {
				count[t]++
			}
		}
		if count[t] > 1 {
			out = append(out, t)
		}
	}
	sortTerms(out, count)
	return out
}

func sortTerms(terms []kruiseappspub.UpdateScatterTerm, count map[kruiseappspub.UpdateScatterTerm]int) {
	for i := 1; i < len(terms); i++ {
		for j := i; j > 0 && count[terms[j]] > count[terms[j-1]]; j-- {
			terms[j], terms[j-1] = terms[j-1], terms[j]
		}
	}
}

// spread places the pods matching t at evenly spaced positions and fills the rest with the others.
func spread(pods []*corev1.Pod, t kruiseappspub.UpdateScatterTerm) []*corev1.Pod {
	var hit, rest []*corev1.Pod
	for _, p := range pods {
		if matches(p, t) {
			hit = append(hit, p)
		} else {
			rest = append(rest, p)
		}
	}
	if len(hit) < 2 || len(rest) == 0 {
		return pods
	}
	out := make([]*corev1.Pod, 0, len(pods))
	step := float64(len(pods)) / float64(len(hit))
	next := 0.0
	for i := 0; i < len(pods); i++ {
		if len(hit) > 0 && float64(i) >= next {
			out, hit, next = append(out, hit[0]), hit[1:], next+step
			continue
		}
		if len(rest) > 0 {
			out, rest = append(out, rest[0]), rest[1:]
			continue
		}
		out, hit = append(out, hit[0]), hit[1:]
	}
	return out
}
