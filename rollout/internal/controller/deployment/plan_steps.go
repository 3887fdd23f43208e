package deployment

import "maps"

// steps turns the sizes after each phase of the plan into writes, in the order Plan.Steps documents.
// A new ReplicaSet that does not exist yet is always created, first, with the size of the first phase.
func steps(in Input, replicas int32, start, grown, shrunk, final sizes) []Step {
	if start.new > 0 && grown.new != start.new && final.new != shrunk.new {
		// Growing, shrinking and growing again: with the new ReplicaSet already active, shrinking first and
		// growing once stays within the same limits (the shrink counted the growth's pods as unavailable)
		// and writes the new ReplicaSet once instead of twice.
		grown.new, shrunk.new = start.new, start.new
	}
	var out []Step
	created := in.New != nil
	scaleNew := func(from, to int32) {
		out = append(out, Step{Name: newName(in), New: true, Create: !created, From: from, To: to})
		created = true
	}
	if !created || grown.new != start.new {
		scaleNew(start.new, grown.new)
	}
	out = append(out, oldSteps(in, grown, shrunk)...)
	if final.new != shrunk.new {
		scaleNew(shrunk.new, final.new)
	}
	out = append(out, oldSteps(in, shrunk, final)...)
	out = append(out, annotationSteps(in, replicas, out, final)...)
	return stamp(in, out, final.new)
}

// stamp sets the batch labels of the new ReplicaSet's writes. Each write that grows it stamps the batch's pod
// labels on its template, so that the pods it creates carry them and the release need not patch each one.
// Once it has created every pod and this plan does not grow it, the stamps go: kube-controller-manager,
// which compares templates but for the hash label, would otherwise take it for another revision when the
// Deployment resumes. A new ReplicaSet is stamped only while it grows, which also keeps kube-controller-
// manager's status of the paused Deployment from counting its pods as out of date for longer than that.
func stamp(in Input, out []Step, finalNew int32) []Step {
	var stamped map[string]string
	if in.New != nil {
		stamped = in.New.Stamped
	}
	grows := false
	for i := range out {
		s := &out[i]
		if !s.New || s.To <= s.From {
			continue
		}
		grows = true
		if !maps.Equal(stamped, in.PodLabels) {
			s.Relabel, s.Labels, stamped = true, in.PodLabels, in.PodLabels
		}
	}
	if grows || len(stamped) == 0 || in.New == nil || !in.New.Settled {
		return out
	}
	for i := range out {
		if out[i].New {
			out[i].Relabel = true
			return out
		}
	}
	return append(out, Step{Name: in.New.Name, New: true, From: finalNew, To: finalNew, Relabel: true})
}

func newName(in Input) string {
	if in.New == nil {
		return ""
	}
	return in.New.Name
}

// oldSteps are the writes to old ReplicaSets between two phases.
func oldSteps(in Input, before, after sizes) []Step {
	var out []Step
	for i, rs := range in.Old {
		if before.old[i] != after.old[i] {
			out = append(out, Step{Name: rs.Name, From: before.old[i], To: after.old[i]})
		}
	}
	return out
}

// annotationSteps rewrite the replica annotations of active ReplicaSets no step writes whose
// annotations are stale, so that kube-controller-manager sees no scaling event once it takes the
// Deployment back.
func annotationSteps(in Input, replicas int32, done []Step, final sizes) []Step {
	written := map[string]bool{}
	for _, s := range done {
		written[s.Name] = true
	}
	var out []Step
	if in.New != nil && !written[in.New.Name] && final.new > 0 && staleAnnotations(*in.New, replicas) {
		out = append(out, Step{Name: in.New.Name, New: true, From: final.new, To: final.new})
	}
	for i, rs := range in.Old {
		if !written[rs.Name] && final.old[i] > 0 && staleAnnotations(rs, replicas) {
			out = append(out, Step{Name: rs.Name, From: final.old[i], To: final.old[i]})
		}
	}
	return out
}

func staleAnnotations(rs ReplicaSetState, replicas int32) bool {
	return rs.DesiredReplicas == nil || *rs.DesiredReplicas != replicas ||
		rs.MaxReplicas == nil || *rs.MaxReplicas != replicas
}
