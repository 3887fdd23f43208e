package binding

import (
	"fmt"
	"slices"

	"k8s.io/utils/ptr"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// builtinArgs are the arguments every run of the release gets, in analysisv1alpha1.BuiltinArgs' order.
func builtinArgs(ro *rolloutsv1beta1.Rollout, rel release, step int32) []analysisv1alpha1.Argument {
	values := map[string]string{
		analysisv1alpha1.ArgNamespace:      ro.Namespace,
		analysisv1alpha1.ArgRollout:        ro.Name,
		analysisv1alpha1.ArgWorkloadKind:   ro.Spec.WorkloadRef.Kind,
		analysisv1alpha1.ArgWorkloadName:   ro.Spec.WorkloadRef.Name,
		analysisv1alpha1.ArgStableRevision: rel.StableRevision,
		analysisv1alpha1.ArgCanaryRevision: rel.Revision,
		analysisv1alpha1.ArgStepIndex:      fmt.Sprint(step),
	}
	out := make([]analysisv1alpha1.Argument, 0, len(analysisv1alpha1.BuiltinArgs))
	for _, name := range analysisv1alpha1.BuiltinArgs {
		out = append(out, analysisv1alpha1.Argument{Name: name, Value: ptr.To(values[name])})
	}
	return out
}

// mergeArgs lays the layers over the built-in arguments: a later layer's argument replaces an earlier one's
// of the same name, in its place, but a built-in one is never replaced (the run must measure this release).
func mergeArgs(builtins []analysisv1alpha1.Argument, layers ...[]analysisv1alpha1.Argument) []analysisv1alpha1.Argument {
	out := slices.Clone(builtins)
	index := map[string]int{}
	for i, a := range out {
		index[a.Name] = i
	}
	for _, layer := range layers {
		for _, a := range layer {
			i, ok := index[a.Name]
			switch {
			case slices.Contains(analysisv1alpha1.BuiltinArgs, a.Name):
				continue
			case ok:
				out[i] = *a.DeepCopy()
			default:
				index[a.Name] = len(out)
				out = append(out, *a.DeepCopy())
			}
		}
	}
	return out
}
