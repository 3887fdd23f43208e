package binding

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

var now = metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))

// analysis gates steps 1 and 3 and runs a background run from step 2.
func analysis() *analysisv1alpha1.RolloutAnalysis {
	return &analysisv1alpha1.RolloutAnalysis{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop", UID: "ra-uid", Generation: 3},
		Spec: analysisv1alpha1.RolloutAnalysisSpec{
			RolloutRef: analysisv1alpha1.RolloutRef{Name: "checkout"},
			Args:       []analysisv1alpha1.Argument{arg("service", "checkout"), arg("window", "5m"), arg("rollout", "evil")},
			Steps: []analysisv1alpha1.StepAnalysis{
				{Step: 1, Templates: []analysisv1alpha1.TemplateRef{{Name: "http-errors"}}, Args: []analysisv1alpha1.Argument{arg("window", "1m")}},
				{Step: 3, Templates: []analysisv1alpha1.TemplateRef{{Name: "http-errors"}, {Name: "ci", ClusterScope: true}}},
			},
			Background: &analysisv1alpha1.BackgroundAnalysis{
				Templates: []analysisv1alpha1.TemplateRef{{Name: "latency"}}, StartingStep: ptr.To[int32](2),
				Args: []analysisv1alpha1.Argument{arg("step-index", "9"), arg("quantile", "0.99")},
			},
		},
	}
}

func arg(name, value string) analysisv1alpha1.Argument {
	return analysisv1alpha1.Argument{Name: name, Value: ptr.To(value)}
}

// rollout is a canary Rollout of a Deployment releasing rev at step in state.
func rollout(rev string, step int32, state rolloutsv1beta1.CanaryStepState) *rolloutsv1beta1.Rollout {
	ro := &rolloutsv1beta1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop"},
		Spec:       rolloutsv1beta1.RolloutSpec{WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
		Status:     rolloutsv1beta1.RolloutStatus{Phase: rolloutsv1beta1.RolloutPhaseProgressing},
	}
	ro.Status.CanaryStatus = &rolloutsv1beta1.CanaryStatus{CanaryRevision: rev}
	ro.Status.CanaryStatus.StableRevision, ro.Status.CanaryStatus.CurrentStepIndex, ro.Status.CanaryStatus.CurrentStepState = "stable1", step, state
	return ro
}

// run is an owned run with a phase.
func run(name string, step int32, phase analysisv1alpha1.AnalysisPhase, msg string) analysisv1alpha1.AnalysisRun {
	return analysisv1alpha1.AnalysisRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{analysisv1alpha1.StepLabel: fmt.Sprint(step)}},
		Status:     analysisv1alpha1.AnalysisRunStatus{Phase: phase, Message: msg},
	}
}

func listed(runs ...analysisv1alpha1.RolloutAnalysisRun) []analysisv1alpha1.RolloutAnalysisRun {
	return runs
}

func entry(name string, step int32, phase analysisv1alpha1.AnalysisPhase) analysisv1alpha1.RolloutAnalysisRun {
	return analysisv1alpha1.RolloutAnalysisRun{Name: name, Step: step, Phase: phase}
}

const (
	analysing = rolloutsv1beta1.CanaryStepStateMetricsAnalysis
	upgrade   = rolloutsv1beta1.CanaryStepStateUpgrade
	paused    = rolloutsv1beta1.CanaryStepStatePaused
	done      = rolloutsv1beta1.CanaryStepStateCompleted
	running   = analysisv1alpha1.AnalysisPhaseRunning
	success   = analysisv1alpha1.AnalysisPhaseSuccessful
	failed    = analysisv1alpha1.AnalysisPhaseFailed
)

func TestCompute(t *testing.T) {
	type want struct {
		create, terminate []string
		runs              []analysisv1alpha1.RolloutAnalysisRun
		rev               string
		attempt           int32
		observedRetry     string
		ready, stalled    string // "<status> <reason>"
		message           string
		events            []string // "<reason>: <note>"
	}
	cases := []struct {
		name   string
		edit   func(ra *analysisv1alpha1.RolloutAnalysis)
		ro     *rolloutsv1beta1.Rollout
		winner string
		runs   []analysisv1alpha1.AnalysisRun
		want   want
	}{{
		name: "rollout missing: nothing created",
		want: want{ready: "False RolloutNotFound", stalled: "False RolloutNotFound", message: "Rollout checkout not found"},
	}, {
		name:   "an older RolloutAnalysis names the Rollout",
		ro:     rollout("r1", 1, analysing),
		winner: "first",
		want: want{ready: "False Conflict", stalled: "True Conflict",
			message: "Rollout checkout is analysed by RolloutAnalysis first, which is older"},
	}, {
		name: "no release yet",
		ro:   &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "checkout"}, Status: rolloutsv1beta1.RolloutStatus{Phase: rolloutsv1beta1.RolloutPhaseHealthy}},
		want: want{ready: "True Passing", stalled: "False Passing", message: "no release of Rollout checkout yet"},
	}, {
		name: "a new release before its first gate",
		ro:   rollout("r1", 1, upgrade),
		want: want{rev: "r1", ready: "True Passing", stalled: "False Passing", message: "waiting for step 1"},
	}, {
		name: "the gated step reaches StepMetricsAnalysis: its run is created",
		ro:   rollout("r1", 1, analysing),
		want: want{rev: "r1", create: []string{"checkout-r1-0-1"}, runs: listed(entry("checkout-r1-0-1", 1, "")),
			ready: "True Passing", stalled: "False Passing", message: "step 1: run checkout-r1-0-1 Pending"},
	}, {
		name: "an existing run is not created again; its phase is reported",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) { ra.Status.CanaryRevision = "r1" },
		ro:   rollout("r1", 1, analysing),
		runs: []analysisv1alpha1.AnalysisRun{run("checkout-r1-0-1", 1, running, "")},
		want: want{rev: "r1", runs: listed(entry("checkout-r1-0-1", 1, running)),
			ready: "True Passing", stalled: "False Passing", message: "step 1: run checkout-r1-0-1 Running"},
	}, {
		name: "an ungated step in StepMetricsAnalysis creates no step run; the background starts at its step",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) {
			ra.Status.CanaryRevision = "r1"
			ra.Status.Runs = listed(entry("checkout-r1-0-1", 1, running))
		},
		ro:   rollout("r1", 2, analysing),
		runs: []analysisv1alpha1.AnalysisRun{run("checkout-r1-0-1", 1, success, "")},
		want: want{rev: "r1", create: []string{"checkout-r1-0-bg"},
			runs:  listed(entry("checkout-r1-0-bg", 0, ""), entry("checkout-r1-0-1", 1, success)),
			ready: "True Passing", stalled: "False Passing", message: "waiting for step 3; background: run checkout-r1-0-bg Pending",
			events: []string{"RunSucceeded: AnalysisRun checkout-r1-0-1 of step 1 Successful"}},
	}, {
		name: "a failed run stalls the analysis, once",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) {
			ra.Status.CanaryRevision = "r1"
			ra.Status.Runs = listed(entry("checkout-r1-0-bg", 0, running), entry("checkout-r1-0-3", 3, running))
		},
		ro: rollout("r1", 3, analysing),
		runs: []analysisv1alpha1.AnalysisRun{run("checkout-r1-0-1", 1, success, ""), run("checkout-r1-0-bg", 0, running, ""),
			run("checkout-r1-0-3", 3, failed, "metric error-rate failed")},
		want: want{rev: "r1",
			runs:  listed(entry("checkout-r1-0-bg", 0, running), entry("checkout-r1-0-1", 1, success), entry("checkout-r1-0-3", 3, failed)),
			ready: "False Failed", stalled: "True AnalysisFailed", message: "run checkout-r1-0-3 failed: metric error-rate failed",
			events: []string{"RunSucceeded: AnalysisRun checkout-r1-0-1 of step 1 Successful",
				"RunFailed: AnalysisRun checkout-r1-0-3 of step 3 Failed: metric error-rate failed"}},
	}, {
		name: "an inconclusive run is not Ready but does not stall",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) {
			ra.Status.CanaryRevision = "r1"
			ra.Status.Runs = listed(entry("checkout-r1-0-1", 1, analysisv1alpha1.AnalysisPhaseInconclusive))
		},
		ro:   rollout("r1", 1, analysing),
		runs: []analysisv1alpha1.AnalysisRun{run("checkout-r1-0-1", 1, analysisv1alpha1.AnalysisPhaseInconclusive, "neither held")},
		want: want{rev: "r1", runs: listed(entry("checkout-r1-0-1", 1, analysisv1alpha1.AnalysisPhaseInconclusive)),
			ready: "False Inconclusive", stalled: "False Inconclusive", message: "run checkout-r1-0-1 was inconclusive: neither held"},
	}, {
		name: "a retry resets the runs, bumps the attempt and terminates what still runs",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) {
			ra.Annotations = map[string]string{analysisv1alpha1.RetryAnnotation: "t2"}
			ra.Status.CanaryRevision, ra.Status.ObservedRetry = "r1", "t1"
			ra.Status.Runs = listed(entry("checkout-r1-0-bg", 0, running), entry("checkout-r1-0-3", 3, failed))
		},
		ro:   rollout("r1", 3, analysing),
		runs: []analysisv1alpha1.AnalysisRun{run("checkout-r1-0-bg", 0, running, ""), run("checkout-r1-0-3", 3, failed, "x")},
		want: want{rev: "r1", attempt: 1, observedRetry: "t2", create: []string{"checkout-r1-1-3", "checkout-r1-1-bg"},
			terminate: []string{"checkout-r1-0-bg"},
			runs:      listed(entry("checkout-r1-1-bg", 0, ""), entry("checkout-r1-1-3", 3, "")),
			ready:     "True Passing", stalled: "False Passing",
			message: "step 3: run checkout-r1-1-3 Pending; background: run checkout-r1-1-bg Pending",
			events:  []string{"Retried: Retrying the analysis of revision r1: attempt 1"}},
	}, {
		name: "a retry already honoured changes nothing",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) {
			ra.Annotations = map[string]string{analysisv1alpha1.RetryAnnotation: "t1"}
			ra.Status.CanaryRevision, ra.Status.ObservedRetry, ra.Status.Attempt = "r1", "t1", 1
		},
		ro:   rollout("r1", 1, upgrade),
		want: want{rev: "r1", attempt: 1, observedRetry: "t1", ready: "True Passing", stalled: "False Passing", message: "waiting for step 1"},
	}, {
		name: "a new revision starts at attempt 0 and terminates the old release's runs",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) {
			ra.Annotations = map[string]string{analysisv1alpha1.RetryAnnotation: "t3"}
			ra.Status.CanaryRevision, ra.Status.ObservedRetry, ra.Status.Attempt = "r1", "t2", 2
			ra.Status.Runs = listed(entry("checkout-r1-2-bg", 0, running))
		},
		ro:   rollout("r2", 1, analysing),
		runs: []analysisv1alpha1.AnalysisRun{run("checkout-r1-2-bg", 0, running, ""), run("checkout-r1-1-bg", 0, success, "")},
		want: want{rev: "r2", observedRetry: "t3", create: []string{"checkout-r2-0-1"}, terminate: []string{"checkout-r1-2-bg"},
			runs: listed(entry("checkout-r2-0-1", 1, "")), ready: "True Passing", stalled: "False Passing",
			message: "step 1: run checkout-r2-0-1 Pending"},
	}, {
		name: "the release completes: the background run is terminated",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) {
			ra.Status.CanaryRevision = "r1"
			ra.Status.Runs = listed(entry("checkout-r1-0-bg", 0, running))
		},
		ro:   rollout("r1", 4, done),
		runs: []analysisv1alpha1.AnalysisRun{run("checkout-r1-0-bg", 0, running, "")},
		want: want{rev: "r1", terminate: []string{"checkout-r1-0-bg"}, runs: listed(entry("checkout-r1-0-bg", 0, running)),
			ready: "True Passing", stalled: "False Passing", message: "the release of revision r1 is not in progress"},
	}, {
		name: "a terminated run is not terminated again",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) { ra.Status.CanaryRevision = "r1" },
		ro: func() *rolloutsv1beta1.Rollout {
			ro := rollout("r1", 4, paused)
			ro.Status.Phase = rolloutsv1beta1.RolloutPhaseHealthy
			return ro
		}(),
		runs: []analysisv1alpha1.AnalysisRun{func() analysisv1alpha1.AnalysisRun {
			r := run("checkout-r1-0-bg", 0, running, "")
			r.Spec.Terminate = true
			return r
		}()},
		want: want{rev: "r1", runs: listed(entry("checkout-r1-0-bg", 0, running)),
			ready: "True Passing", stalled: "False Passing", message: "the release of revision r1 is not in progress"},
	}, {
		name: "a blue-green release reads its updated revision",
		ro: func() *rolloutsv1beta1.Rollout {
			ro := rollout("", 0, "")
			ro.Status.CanaryStatus = nil
			ro.Status.BlueGreenStatus = &rolloutsv1beta1.BlueGreenStatus{UpdatedRevision: "bg1"}
			ro.Status.BlueGreenStatus.CurrentStepIndex, ro.Status.BlueGreenStatus.CurrentStepState = 1, analysing
			return ro
		}(),
		want: want{rev: "bg1", create: []string{"checkout-bg1-0-1"}, runs: listed(entry("checkout-bg1-0-1", 1, "")),
			ready: "True Passing", stalled: "False Passing", message: "step 1: run checkout-bg1-0-1 Pending"},
	}, {
		name: "a run measuring until its step's pause ends measures through the pause",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) { ra.Status.CanaryRevision = "r1" },
		ro:   pausing(rollout("r1", 1, paused), 60),
		runs: []analysisv1alpha1.AnalysisRun{untilTerminated(run("checkout-r1-0-1", 1, running, ""))},
		want: want{rev: "r1", runs: listed(measuring(entry("checkout-r1-0-1", 1, running))),
			ready: "True Passing", stalled: "False Passing", message: "step 1: run checkout-r1-0-1 Running"},
	}, {
		name: "the step's pause ended (by time or approval): its run is terminated",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) { ra.Status.CanaryRevision = "r1" },
		ro:   pausing(rollout("r1", 1, rolloutsv1beta1.CanaryStepStateReady), 60),
		runs: []analysisv1alpha1.AnalysisRun{untilTerminated(run("checkout-r1-0-1", 1, running, ""))},
		want: want{rev: "r1", terminate: []string{"checkout-r1-0-1"}, runs: listed(measuring(entry("checkout-r1-0-1", 1, running))),
			ready: "True Passing", stalled: "False Passing", message: "step 1: run checkout-r1-0-1 Running"},
	}, {
		name: "a counted run still measuring is not terminated at the pause's end",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) { ra.Status.CanaryRevision = "r1" },
		ro:   pausing(rollout("r1", 1, rolloutsv1beta1.CanaryStepStateReady), 60),
		runs: []analysisv1alpha1.AnalysisRun{run("checkout-r1-0-1", 1, running, "")},
		want: want{rev: "r1", runs: listed(entry("checkout-r1-0-1", 1, running)),
			ready: "True Passing", stalled: "False Passing", message: "step 1: run checkout-r1-0-1 Running"},
	}, {
		name: "a run measuring until the pause ends at a step without a pause: not Ready, said once",
		edit: func(ra *analysisv1alpha1.RolloutAnalysis) { ra.Status.CanaryRevision = "r1" },
		ro:   pausing(rollout("r1", 1, paused), 0),
		runs: []analysisv1alpha1.AnalysisRun{untilTerminated(run("checkout-r1-0-1", 1, running, ""))},
		want: want{rev: "r1", runs: listed(measuring(entry("checkout-r1-0-1", 1, running))),
			ready: "False StepPauseNeeded", stalled: "False Passing", message: noPause,
			events: []string{"StepPauseNeeded: " + noPause}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ra := analysis()
			if tc.edit != nil {
				tc.edit(ra)
			}
			p := Compute(Input{Analysis: ra, Rollout: tc.ro, Winner: tc.winner, Runs: tc.runs, Now: now})
			st := p.Status
			var created []string
			for _, r := range p.Create {
				created = append(created, r.Name)
			}
			slices.Sort(created)
			w := tc.want
			check(t, "create", created, w.create)
			check(t, "terminate", p.Terminate, w.terminate)
			check(t, "runs", st.Runs, w.runs)
			check(t, "revision", st.CanaryRevision, w.rev)
			check(t, "attempt", st.Attempt, w.attempt)
			check(t, "observedRetry", st.ObservedRetry, w.observedRetry)
			check(t, "Ready", condition(st, analysisv1alpha1.RolloutAnalysisReady), w.ready)
			check(t, "Stalled", condition(st, analysisv1alpha1.RolloutAnalysisStalled), w.stalled)
			check(t, "message", st.Message, w.message)
			check(t, "observedGeneration", st.ObservedGeneration, ra.Generation)
			var events []string
			for _, e := range p.Events {
				events = append(events, e.Reason+": "+e.Note)
				if wantType := corev1.EventTypeNormal; e.Reason == ReasonRunFailed || e.Reason == ReasonStepPauseNeeded {
					check(t, "event type", e.Type, corev1.EventTypeWarning)
				} else {
					check(t, "event type", e.Type, wantType)
				}
			}
			check(t, "events", events, w.events)
		})
	}
}

// check compares got with want, nil and empty slices alike.
func check[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func condition(st analysisv1alpha1.RolloutAnalysisStatus, typ string) string {
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		return "missing"
	}
	if c.ObservedGeneration != st.ObservedGeneration || !c.LastTransitionTime.Equal(&now) {
		return "unstamped"
	}
	return string(c.Status) + " " + c.Reason
}

// Under abortOnProgressDeadline the engine's stall past the deadline is recorded once (not the abort that
// follows it), Stalls the binding, and a retry clears it.
func TestComputeRecordsProgressDeadline(t *testing.T) {
	ra := analysis()
	ra.Spec.AbortOnProgressDeadline = true
	ra.Status.CanaryRevision = "rev2"
	ro := rollout("rev2", 2, upgrade)
	stalled := "the pods of step(2) did not become ready within progressDeadlineSeconds (1m0s): web-x (container app: CrashLoopBackOff)"
	ro.Status.Conditions = []rolloutsv1beta1.RolloutCondition{{Type: "Stalled", Status: corev1.ConditionTrue,
		Reason: analysisv1alpha1.ReasonProgressDeadlineExceeded, Message: stalled}}

	p := Compute(Input{Analysis: ra, Rollout: ro, Now: now})
	if p.Status.ProgressDeadlineExceeded != stalled || len(p.Events) != 1 || p.Events[0].Reason != analysisv1alpha1.ReasonProgressDeadlineExceeded {
		t.Fatalf("recorded %q, events %+v", p.Status.ProgressDeadlineExceeded, p.Events)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, analysisv1alpha1.RolloutAnalysisStalled); c == nil ||
		c.Status != metav1.ConditionTrue || c.Reason != analysisv1alpha1.ReasonProgressDeadlineExceeded {
		t.Errorf("Stalled %+v", c)
	}

	ra.Spec.AbortOnProgressDeadline = false
	if p := Compute(Input{Analysis: ra, Rollout: ro, Now: now}); p.Status.ProgressDeadlineExceeded != "" {
		t.Errorf("recorded without abortOnProgressDeadline")
	}

	ra.Spec.AbortOnProgressDeadline = true
	ra.Status = p.Status
	ra.Annotations = map[string]string{analysisv1alpha1.RetryAnnotation: "t1"}
	ro.Status.Conditions = append(ro.Status.Conditions, rolloutsv1beta1.RolloutCondition{Type: rolloutsv1beta1.RolloutConditionProgressing,
		Status: corev1.ConditionTrue, Reason: "Aborted"})
	if p := Compute(Input{Analysis: ra, Rollout: ro, Now: now}); p.Status.ProgressDeadlineExceeded != "" || p.Status.Attempt != 1 {
		t.Errorf("after a retry, with the abort still showing: recorded %q, attempt %d; want cleared, attempt 1",
			p.Status.ProgressDeadlineExceeded, p.Status.Attempt)
	}
}

const noPause = "step 1: run checkout-r1-0-1 measures until the step's pause ends (metrics without a count, templates http-errors), " +
	"but step 1 has no pause: it waits for an approval instead; give the step a pause duration"

// pausing gives ro three steps pausing seconds each.
func pausing(ro *rolloutsv1beta1.Rollout, seconds int32) *rolloutsv1beta1.Rollout {
	step := rolloutsv1beta1.CanaryStep{Pause: rolloutsv1beta1.RolloutPause{Duration: ptr.To(seconds)}}
	ro.Spec.Strategy.Canary = &rolloutsv1beta1.CanaryStrategy{Steps: []rolloutsv1beta1.CanaryStep{step, step, step}}
	return ro
}

func untilTerminated(r analysisv1alpha1.AnalysisRun) analysisv1alpha1.AnalysisRun {
	r.Status.UntilTerminated = true
	return r
}

func measuring(e analysisv1alpha1.RolloutAnalysisRun) analysisv1alpha1.RolloutAnalysisRun {
	e.UntilTerminated = true
	return e
}
