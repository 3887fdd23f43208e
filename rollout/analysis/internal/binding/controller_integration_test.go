package binding

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

func newAnalysis(ns, name string, background bool) *analysisv1alpha1.RolloutAnalysis {
	ra := &analysisv1alpha1.RolloutAnalysis{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: analysisv1alpha1.RolloutAnalysisSpec{
			RolloutRef: analysisv1alpha1.RolloutRef{Name: rolloutName},
			Args:       []analysisv1alpha1.Argument{arg("service", "checkout")},
			Steps: []analysisv1alpha1.StepAnalysis{
				{Step: 1, Templates: []analysisv1alpha1.TemplateRef{{Name: "http-errors"}}, Args: []analysisv1alpha1.Argument{arg("window", "1m")}},
				{Step: 2, Templates: []analysisv1alpha1.TemplateRef{{Name: "ci", ClusterScope: true}}},
			},
		},
	}
	if background {
		ra.Spec.Background = &analysisv1alpha1.BackgroundAnalysis{Templates: []analysisv1alpha1.TemplateRef{{Name: "latency"}}}
	}
	return ra
}

// A gated step's run is created when the release waits in StepMetricsAnalysis at the step, named, labelled,
// owned and given its arguments as the contract says; the status follows the run's phases; a failed run
// stalls the analysis; a retry starts a new attempt whose runs are created again, the old ones kept; a new revision starts over.
func TestStepRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t)
	e.newRollout(t)
	managertest.Create(t, e.c, newAnalysis(e.ns, "checkout", false))
	e.waitMessage(t, "checkout", "no release of Rollout checkout yet")

	e.release(t, "r1", 1, rolloutsv1beta1.CanaryStepStateUpgrade)
	e.waitMessage(t, "checkout", "waiting for step 1")
	if runs := e.runs(t); len(runs) != 0 {
		t.Fatalf("runs before StepMetricsAnalysis: %v", slices.Collect(maps.Keys(runs)))
	}

	e.release(t, "r1", 1, rolloutsv1beta1.CanaryStepStateMetricsAnalysis)
	ra := e.waitMessage(t, "checkout", "step 1: run checkout-r1-0-1 Pending")
	checkStepRun(t, e.waitRunExists(t, "checkout-r1-0-1"), ra, e.ns)
	if got := cond(ra, analysisv1alpha1.RolloutAnalysisReady); got != "True Passing" {
		t.Errorf("Ready %s", got)
	}
	e.waitEvent(t, ReasonRunCreated)

	e.setRun(t, "checkout-r1-0-1", analysisv1alpha1.AnalysisPhaseRunning, "")
	e.waitMessage(t, "checkout", "step 1: run checkout-r1-0-1 Running")
	e.setRun(t, "checkout-r1-0-1", analysisv1alpha1.AnalysisPhaseSuccessful, "every metric successful")
	e.waitMessage(t, "checkout", "step 1: run checkout-r1-0-1 Successful")
	e.waitEvent(t, ReasonRunSucceeded)

	e.release(t, "r1", 2, rolloutsv1beta1.CanaryStepStateMetricsAnalysis)
	e.setRun(t, "checkout-r1-0-2", analysisv1alpha1.AnalysisPhaseFailed, "metric ci failed")
	ra = e.waitMessage(t, "checkout", "run checkout-r1-0-2 failed: metric ci failed")
	if got := cond(ra, analysisv1alpha1.RolloutAnalysisStalled); got != "True AnalysisFailed" {
		t.Errorf("Stalled %s", got)
	}
	if got := cond(ra, analysisv1alpha1.RolloutAnalysisReady); got != "False Failed" {
		t.Errorf("Ready %s", got)
	}
	if notes := e.waitEvent(t, ReasonRunFailed); !strings.Contains(notes[0], "Failed: metric ci failed") {
		t.Errorf("RunFailed notes %q", notes)
	}

	// kubectl kruise rollout retry writes the annotation.
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"analysis.flotilla.dev/retry":"2025-01-01T00:00:00Z"}}}`))
	if err := e.c.Patch(t.Context(), ra, patch); err != nil {
		t.Fatal(err)
	}
	ra = e.waitMessage(t, "checkout", "step 2: run checkout-r1-1-2 Pending")
	if s := ra.Status; s.Attempt != 1 || s.ObservedRetry != "2025-01-01T00:00:00Z" || len(s.Runs) != 1 || cond(ra, analysisv1alpha1.RolloutAnalysisStalled) != "False Passing" {
		t.Errorf("after the retry: %+v", s)
	}
	e.waitEvent(t, ReasonRetried)
	if runs := e.runs(t); len(runs) != 3 {
		t.Errorf("the old runs stay beside the new: %v", slices.Collect(maps.Keys(runs)))
	}

	// A new revision starts at attempt 0 and stops the previous release's run still measuring.
	e.release(t, "r2", 1, rolloutsv1beta1.CanaryStepStateMetricsAnalysis)
	ra = e.waitMessage(t, "checkout", "step 1: run checkout-r2-0-1 Pending")
	if s := ra.Status; s.CanaryRevision != "r2" || s.Attempt != 0 || len(s.Runs) != 1 {
		t.Errorf("after a new revision: %+v", s)
	}
	managertest.Eventually(t, itTimeout, "the old release's run terminated", func(context.Context) (bool, error) {
		return e.waitRunExists(t, "checkout-r1-1-2").Spec.Terminate, nil
	})
}

// The background run starts with the release and is terminated when the release completes; a new manager
// finds the runs the previous one created instead of creating others.
func TestBackgroundRunAndRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.newRollout(t)
	managertest.Create(t, e.c, newAnalysis(e.ns, "checkout", true))
	e.release(t, "r1", 1, rolloutsv1beta1.CanaryStepStateMetricsAnalysis)
	t.Run("first manager", func(t *testing.T) {
		e.start(t)
		e.waitMessage(t, "checkout", "step 1: run checkout-r1-0-1 Pending; background: run checkout-r1-0-bg Pending")
		e.setRun(t, "checkout-r1-0-bg", analysisv1alpha1.AnalysisPhaseRunning, "")
		e.waitMessage(t, "checkout", "step 1: run checkout-r1-0-1 Pending; background: run checkout-r1-0-bg Running")
	})
	before := e.runs(t)
	t.Run("second manager", func(t *testing.T) {
		e.start(t)
		e.setRun(t, "checkout-r1-0-1", analysisv1alpha1.AnalysisPhaseSuccessful, "")
		e.waitMessage(t, "checkout", "step 1: run checkout-r1-0-1 Successful; background: run checkout-r1-0-bg Running")
		after := e.runs(t)
		if len(after) != 2 || len(before) != 2 {
			t.Fatalf("runs before the restart %v, after %v", slices.Collect(maps.Keys(before)), slices.Collect(maps.Keys(after)))
		}
		for name, run := range after {
			if before[name] == nil || before[name].UID != run.UID {
				t.Errorf("run %s was created again", name)
			}
		}

		e.release(t, "r1", 2, rolloutsv1beta1.CanaryStepStateCompleted)
		managertest.Eventually(t, itTimeout, "the background run terminated", func(ctx context.Context) (bool, error) {
			bg := e.waitRunExists(t, "checkout-r1-0-bg")
			return bg.Spec.Terminate, nil
		})
		e.waitMessage(t, "checkout", "the release of revision r1 is not in progress")
		if run := e.waitRunExists(t, "checkout-r1-0-1"); run.Spec.Terminate {
			t.Error("a finished run was terminated")
		}
	})
}

// A RolloutAnalysis whose Rollout is missing waits for it; of two naming one Rollout the older acts, the other
// stalls with reason Conflict until the older goes.
func TestMissingRolloutAndConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t)
	managertest.Create(t, e.c, newAnalysis(e.ns, "first", false))
	ra := e.waitMessage(t, "first", "Rollout checkout not found")
	if got := cond(ra, analysisv1alpha1.RolloutAnalysisReady); got != "False RolloutNotFound" {
		t.Errorf("Ready %s", got)
	}
	e.newRollout(t)
	e.release(t, "r1", 1, rolloutsv1beta1.CanaryStepStateMetricsAnalysis)
	e.waitMessage(t, "first", "step 1: run first-r1-0-1 Pending")

	managertest.Create(t, e.c, newAnalysis(e.ns, "second", false))
	ra = e.waitMessage(t, "second", "Rollout checkout is analysed by RolloutAnalysis first, which is older")
	if got := cond(ra, analysisv1alpha1.RolloutAnalysisStalled); got != "True Conflict" {
		t.Errorf("Stalled %s", got)
	}
	if runs := e.runs(t); len(runs) != 1 {
		t.Errorf("the second RolloutAnalysis created runs: %v", slices.Collect(maps.Keys(runs)))
	}
	if err := e.c.Delete(t.Context(), &analysisv1alpha1.RolloutAnalysis{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "first"}}); err != nil {
		t.Fatal(err)
	}
	e.waitMessage(t, "second", "step 1: run second-r1-0-1 Pending")
}

// checkStepRun checks step 1's run: its labels, owner, templates and arguments.
func checkStepRun(t *testing.T, run *analysisv1alpha1.AnalysisRun, ra *analysisv1alpha1.RolloutAnalysis, ns string) {
	t.Helper()
	if run.Labels[analysisv1alpha1.RolloutAnalysisLabel] != "checkout" || run.Labels[analysisv1alpha1.StepLabel] != "1" {
		t.Errorf("labels %v", run.Labels)
	}
	if owner := metav1.GetControllerOf(run); owner == nil || owner.UID != ra.UID || owner.Kind != "RolloutAnalysis" {
		t.Errorf("owner %+v", owner)
	}
	var args []string
	for _, a := range run.Spec.Args {
		args = append(args, a.Name+"="+ptr.Deref(a.Value, ""))
	}
	want := []string{"namespace=" + ns, "rollout=checkout", "workload-kind=Deployment", "workload-name=web",
		"stable-revision=stable0", "canary-revision=r1", "step-index=1", "service=checkout", "window=1m"}
	if !slices.Equal(args, want) || len(run.Spec.Templates) != 1 || run.Spec.Templates[0].Name != "http-errors" {
		t.Errorf("spec: args %v templates %+v", args, run.Spec.Templates)
	}
}

// The API server refuses a built-in argument set by the user, naming the field: the binding always gives it.
func TestBuiltinArgumentRefused(t *testing.T) {
	e := newEnv(t)
	ra := newAnalysis(e.ns, "overrides", false)
	ra.Spec.Steps[0].Args = append(ra.Spec.Steps[0].Args, arg("canary-revision", "mine"))
	err := e.c.Create(t.Context(), ra)
	if err == nil || !strings.Contains(err.Error(), "spec.steps[0].args: Invalid value") || !strings.Contains(err.Error(), "names a built-in argument") {
		t.Fatalf("create = %v, want a refusal naming spec.steps[0].args", err)
	}
}

// A step's run that measures until the step's pause ends (metrics without a count) keeps measuring while the
// step pauses, and is terminated when the pause ends (StepReady); at a step whose pause ends at once (the last
// canary step of 100%) the binding is not Ready and says why, once, naming the step and its templates.
func TestRunUntilStepEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t)
	e.newRollout(t)
	managertest.Create(t, e.c, newAnalysis(e.ns, "checkout", false))
	e.release(t, "r1", 1, rolloutsv1beta1.CanaryStepStateMetricsAnalysis)
	e.setRunUntilTerminated(t, "checkout-r1-0-1")
	e.release(t, "r1", 1, rolloutsv1beta1.CanaryStepStatePaused)
	e.waitStatus(t, "checkout", "the run listed as measuring until terminated", func(st *analysisv1alpha1.RolloutAnalysisStatus) bool {
		return len(st.Runs) == 1 && st.Runs[0].UntilTerminated
	})
	if run := e.waitRunExists(t, "checkout-r1-0-1"); run.Spec.Terminate {
		t.Fatalf("the run was terminated during its step's pause")
	}

	e.release(t, "r1", 1, rolloutsv1beta1.CanaryStepStateReady)
	managertest.Eventually(t, itTimeout, "the run terminated at the pause's end", func(ctx context.Context) (bool, error) {
		run := &analysisv1alpha1.AnalysisRun{}
		err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "checkout-r1-0-1"}, run)
		return err == nil && run.Spec.Terminate, err
	})

	e.release(t, "r1", 2, rolloutsv1beta1.CanaryStepStateMetricsAnalysis)
	e.setRunUntilTerminated(t, "checkout-r1-0-2")
	e.release(t, "r1", 2, rolloutsv1beta1.CanaryStepStatePaused)
	ra := e.waitStatus(t, "checkout", "Ready False, StepPauseNeeded", func(st *analysisv1alpha1.RolloutAnalysisStatus) bool {
		c := meta.FindStatusCondition(st.Conditions, analysisv1alpha1.RolloutAnalysisReady)
		return c != nil && c.Reason == ReasonStepPauseNeeded
	})
	if !strings.Contains(ra.Status.Message, "step 2 has no pause") || !strings.Contains(ra.Status.Message, "templates ci") {
		t.Errorf("message %q", ra.Status.Message)
	}
	if notes := e.waitEvent(t, ReasonStepPauseNeeded); len(notes) != 1 || !strings.Contains(notes[0], "step 2") {
		t.Errorf("StepPauseNeeded events %q, want one naming step 2", notes)
	}
	if run := e.waitRunExists(t, "checkout-r1-0-2"); run.Spec.Terminate {
		t.Errorf("the run of a step without a pause was terminated before an approval")
	}
}

// setRunUntilTerminated writes a run's status as the AnalysisRun controller does for one whose metrics
// measure until it is terminated.
func (e *env) setRunUntilTerminated(t *testing.T, name string) {
	t.Helper()
	run := e.waitRunExists(t, name)
	run.Status.Phase, run.Status.UntilTerminated = analysisv1alpha1.AnalysisPhaseRunning, true
	if err := e.c.Status().Update(t.Context(), run); err != nil {
		t.Fatal(err)
	}
}
