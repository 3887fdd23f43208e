package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

func newRetryCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "retry RESOURCE",
		Short: "Measure a Rollout's release again after its analysis stopped it",
		Long: `Measure a Rollout's release again after its analysis stopped it.

A RolloutAnalysis (analysis.flotilla.dev) whose run fails aborts the release (traffic and pods back on the
stable revision) or holds it at its step. Retry starts a new attempt: the runs of the failed attempt are kept
for the record, the release starts again from its first step (an aborted one) or measures its step again (a
held one). Given a resource type without a name, it retries every Rollout of the namespace that has a
RolloutAnalysis. A Flotilla command; upstream's plugin has none.`,
		Example: `  # The analysis of "demo" failed on a flaky metric: measure again
  kubectl-kruise rollout retry rollout/demo -n ns-demo`,
		DisableFlagsInUseLine: true,
		ValidArgsFunction:     a.completeRollouts,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRetry(cmd.Context(), args)
		},
	}
}

func (a *app) runRetry(ctx context.Context, args []string) error {
	names, err := a.rolloutCollection(ctx, args)
	if err != nil {
		return err
	}
	api, err := a.api()
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		ra, err := retryOne(ctx, api, name, a.clock.Now())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(a.streams.Out, "rollout.%s/%s retried (RolloutAnalysis %s)\n", rolloutsGVR.Group, name, ra)
	}
	return errors.Join(errs...)
}

// retryOne marks the RolloutAnalysis binding the Rollout for a new attempt, and names it.
func retryOne(ctx context.Context, api rolloutAPI, rollout string, now time.Time) (string, error) {
	analyses, err := api.Analyses(ctx, rollout)
	if err != nil {
		return "", err
	}
	if len(analyses) == 0 {
		return "", fmt.Errorf("%s %q has no RolloutAnalysis: nothing to retry", rolloutsResource, rollout)
	}
	ra := analyses[0].Name
	if _, err := api.PatchAnalysis(ctx, ra, retryPatch(now)); err != nil {
		return "", fmt.Errorf("retrying RolloutAnalysis %s: %w", ra, err)
	}
	return ra, nil
}

// retryPatch sets the retry annotation to a value no earlier retry used.
func retryPatch(now time.Time) []byte {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		analysisv1alpha1.RetryAnnotation: now.UTC().Format(time.RFC3339Nano),
	}}})
	return patch
}

// bindingFirst orders RolloutAnalyses naming one Rollout as the manager does: the oldest binds it.
func bindingFirst(list []analysisv1alpha1.RolloutAnalysis) []analysisv1alpha1.RolloutAnalysis {
	slices.SortFunc(list, func(a, b analysisv1alpha1.RolloutAnalysis) int { return analysisv1alpha1.CompareBinding(&a, &b) })
	return list
}
