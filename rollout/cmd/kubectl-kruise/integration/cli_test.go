package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

func TestApproveCanary(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	ro := createRollout(t, ns, "demo", false)
	for _, target := range [][]string{{"rollout/demo"}, {"rollout", "demo"}, {"rollouts.rollouts.kruise.io/demo"}} {
		t.Run(strings.Join(target, " "), func(t *testing.T) {
			setStep(t, ro, 1, rolloutsv1beta1.CanaryStepStatePaused)
			r := kruise(t, append(append([]string{"rollout", "approve"}, target...), "-n", ns)...)
			if r.code != 0 || r.stdout != "rollout.rollouts.kruise.io/demo approved\n" {
				t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if got := getRollout(t, ns, "demo").Status.CanaryStatus.CurrentStepState; got != rolloutsv1beta1.CanaryStepStateReady {
				t.Errorf("canaryStatus.currentStepState = %q, want StepReady", got)
			}
		})
	}
}

func TestApproveBlueGreen(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	ro := createRollout(t, ns, "bg", true)
	setStep(t, ro, 1, rolloutsv1beta1.CanaryStepStatePaused)
	r := kruise(t, "rollout", "approve", "rollout/bg", "--namespace="+ns)
	if r.code != 0 || r.stdout != "rollout.rollouts.kruise.io/bg approved\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	got := getRollout(t, ns, "bg").Status
	if got.BlueGreenStatus.CurrentStepState != rolloutsv1beta1.CanaryStepStateReady || got.CanaryStatus != nil {
		t.Errorf("blueGreenStatus = %+v, canaryStatus = %+v; want blueGreenStatus StepReady only", got.BlueGreenStatus, got.CanaryStatus)
	}
}

func TestApproveRefusedUnlessPaused(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	ro := createRollout(t, ns, "demo", false)
	setStep(t, ro, 2, rolloutsv1beta1.CanaryStepStateUpgrade)
	r := kruise(t, "rollout", "approve", "rollout/demo", "-n", ns)
	want := "error: rollouts.rollouts.kruise.io \"demo\" does not allow to approve, because current canary state is not 'StepPaused' (step 2 is StepUpgrade)\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
	}
	if got := getRollout(t, ns, "demo").Status.CanaryStatus.CurrentStepState; got != rolloutsv1beta1.CanaryStepStateUpgrade {
		t.Errorf("currentStepState = %q, want it untouched (StepUpgrade)", got)
	}
}

// aborted is the Progressing condition the engine writes when a release's analysis aborts it; the step then
// shows StepPaused until a retry or a new revision.
func aborted() rolloutsv1beta1.RolloutCondition {
	return rolloutsv1beta1.RolloutCondition{Type: rolloutsv1beta1.RolloutConditionProgressing, Status: corev1.ConditionTrue,
		Reason: plan.ProgressingReasonAborted, Message: "analysis of step 1 (AnalysisRun demo-rev2-0-1) ended Failed"}
}

func abortedRefusal(ns, name string) string {
	return "error: rollouts.rollouts.kruise.io \"" + name + "\" does not allow to approve, because its analysis aborted the release: " +
		"analysis of step 1 (AnalysisRun demo-rev2-0-1) ended Failed; to release again: kubectl kruise rollout retry rollout/" + name +
		" -n " + ns + ", or revert the revision\n"
}

// TestApproveRefusedWhenAborted: an approval of an aborted release would be undone by the engine, so the CLI
// refuses it and leaves the Rollout as it is.
func TestApproveRefusedWhenAborted(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	ro := createRollout(t, ns, "demo", false)
	setStep(t, ro, 1, rolloutsv1beta1.CanaryStepStatePaused, aborted())
	before := getRollout(t, ns, "demo")
	r := kruise(t, "rollout", "approve", "rollout/demo", "-n", ns)
	if want := abortedRefusal(ns, "demo"); r.code != 1 || r.stdout != "" || r.stderr != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1, nothing, %q", r.code, r.stdout, r.stderr, want)
	}
	after := getRollout(t, ns, "demo")
	if after.ResourceVersion != before.ResourceVersion || after.Status.CanaryStatus.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused {
		t.Errorf("resourceVersion %s -> %s, currentStepState %q; want the Rollout untouched at StepPaused",
			before.ResourceVersion, after.ResourceVersion, after.Status.CanaryStatus.CurrentStepState)
	}
}

// TestApproveWholeKindSkipsAborted: approving every Rollout of the namespace reports the aborted one and
// approves the others, a Progressing condition of another reason included.
func TestApproveWholeKindSkipsAborted(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	first, second := createRollout(t, ns, "first", false), createRollout(t, ns, "second", false)
	setStep(t, first, 1, rolloutsv1beta1.CanaryStepStatePaused, aborted())
	setStep(t, second, 1, rolloutsv1beta1.CanaryStepStatePaused, rolloutsv1beta1.RolloutCondition{
		Type: rolloutsv1beta1.RolloutConditionProgressing, Status: corev1.ConditionTrue,
		Reason: rolloutsv1beta1.ProgressingReasonInRolling, Message: "Rollout is in Progressing"})
	before := getRollout(t, ns, "first")
	r := kruise(t, "rollout", "approve", "rollout", "-n", ns)
	if want := abortedRefusal(ns, "first"); r.code != 1 || r.stdout != "rollout.rollouts.kruise.io/second approved\n" || r.stderr != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1, second approved, %q", r.code, r.stdout, r.stderr, want)
	}
	if after := getRollout(t, ns, "first"); after.ResourceVersion != before.ResourceVersion ||
		after.Status.CanaryStatus.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused {
		t.Errorf("aborted Rollout: resourceVersion %s -> %s, currentStepState %q; want it untouched at StepPaused",
			before.ResourceVersion, after.ResourceVersion, after.Status.CanaryStatus.CurrentStepState)
	}
	if got := getRollout(t, ns, "second").Status.CanaryStatus.CurrentStepState; got != rolloutsv1beta1.CanaryStepStateReady {
		t.Errorf("paused Rollout: currentStepState %q, want StepReady", got)
	}
}

func TestPauseResume(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	createRollout(t, ns, "demo", false)
	steps := []struct {
		verb, wantOut, wantErr string
		wantCode               int
		wantPaused             bool
	}{
		{verb: "pause", wantOut: "rollout.rollouts.kruise.io/demo paused\n", wantPaused: true},
		{verb: "pause", wantCode: 1, wantErr: "error: rollouts.rollouts.kruise.io \"demo\" is already paused\n", wantPaused: true},
		{verb: "resume", wantOut: "rollout.rollouts.kruise.io/demo resumed\n"},
		{verb: "resume", wantCode: 1, wantErr: "error: rollouts.rollouts.kruise.io \"demo\" is not paused\n"},
	}
	for _, s := range steps {
		r := kruise(t, "rollout", s.verb, "rollout/demo", "-n", ns)
		if r.code != s.wantCode || r.stdout != s.wantOut || r.stderr != s.wantErr {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", s.verb, r.code, r.stdout, r.stderr)
		}
		if got := getRollout(t, ns, "demo").Spec.Strategy.Paused; got != s.wantPaused {
			t.Fatalf("after %s: spec.strategy.paused = %v, want %v", s.verb, got, s.wantPaused)
		}
	}
}

// TestContextNamespace selects the namespace through a kubeconfig context, as kubectl does.
func TestContextNamespace(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	createRollout(t, ns, "demo", false)
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	other := *cfg.Contexts[cfg.CurrentContext]
	other.Namespace = ns
	cfg.Contexts["other"] = &other
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	r := kruise(t, "--kubeconfig", path, "--context", "other", "rollout", "pause", "rollout/demo")
	if r.code != 0 || !getRollout(t, ns, "demo").Spec.Strategy.Paused {
		t.Fatalf("exit %d, stderr %q; want the Rollout of context namespace %s paused", r.code, r.stderr, ns)
	}
	r = kruise(t, "--context", "missing", "rollout", "pause", "rollout/demo")
	if r.code != 1 || !strings.Contains(r.stderr, `context "missing" does not exist`) {
		t.Errorf("unknown context: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestStatusExitCodes(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	failed := func(t rolloutsv1beta1.RolloutConditionType, s corev1.ConditionStatus, reason string) rolloutsv1beta1.RolloutCondition {
		return rolloutsv1beta1.RolloutCondition{Type: t, Status: s, Reason: reason, Message: "details"}
	}
	tests := []struct {
		name     string
		index    int32
		state    rolloutsv1beta1.CanaryStepState
		conds    []rolloutsv1beta1.RolloutCondition
		flags    []string
		wantCode int
		wantLast string
	}{
		{name: "completed", index: 3, state: rolloutsv1beta1.CanaryStepStateCompleted, wantCode: 0, wantLast: "Done: the release completed"},
		{name: "awaiting-approval", index: 1, state: rolloutsv1beta1.CanaryStepStatePaused, wantCode: 3,
			wantLast: "Waiting for approval: step 1/3 is paused until approved; approve it with: kubectl-kruise rollout approve rollout/awaiting-approval -n " + ns},
		{name: "success-on-pause", index: 1, state: rolloutsv1beta1.CanaryStepStatePaused, flags: []string{"--success-on-pause"}, wantCode: 0},
		{name: "rolled-back", index: 3, state: rolloutsv1beta1.CanaryStepStateCompleted, wantCode: 2,
			conds:    []rolloutsv1beta1.RolloutCondition{failed(rolloutsv1beta1.RolloutConditionSucceeded, corev1.ConditionFalse, "Rollback")},
			wantLast: "Failed: Succeeded=False (Rollback): details"},
		{name: "traffic-failed", index: 1, state: rolloutsv1beta1.CanaryStepStateTrafficRouting, wantCode: 2,
			conds:    []rolloutsv1beta1.RolloutCondition{failed("Stalled", corev1.ConditionTrue, "TrafficRoutingFailed")},
			wantLast: "Failed: Stalled (TrafficRoutingFailed): details"},
		{name: "in-progress-once", index: 2, state: rolloutsv1beta1.CanaryStepStateUpgrade, flags: []string{"--watch=false"}, wantCode: 4,
			wantLast: "In progress: step 2/3 is StepUpgrade"},
		{name: "in-progress-timeout", index: 2, state: rolloutsv1beta1.CanaryStepStateUpgrade, flags: []string{"-w", "--timeout", "2s"}, wantCode: 4,
			wantLast: "Timed out: step 2/3 is StepUpgrade"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ro := createRollout(t, ns, tt.name, false)
			setStep(t, ro, tt.index, tt.state, tt.conds...)
			r := kruise(t, append([]string{"rollout", "status", "rollout/" + tt.name, "-n", ns}, tt.flags...)...)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if r.code != tt.wantCode || (tt.wantLast != "" && lines[len(lines)-1] != tt.wantLast) {
				t.Fatalf("exit %d (want %d), stderr %q, stdout:\n%s", r.code, tt.wantCode, r.stderr, r.stdout)
			}
			if !strings.HasPrefix(r.stdout, "Rollout "+ns+"/"+tt.name+": ") {
				t.Errorf("stdout does not start with the header:\n%s", r.stdout)
			}
		})
	}
	r := kruise(t, "rollout", "status", "rollout/missing", "-n", ns)
	if r.code != 1 || r.stderr != "error: rollouts.rollouts.kruise.io \"missing\" not found\n" {
		t.Errorf("missing Rollout: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestStatusWatchFollowsChanges watches a release to its end while the test moves its status.
func TestStatusWatchFollowsChanges(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	ro := createRollout(t, ns, "demo", false)
	setStep(t, ro, 2, rolloutsv1beta1.CanaryStepStateUpgrade)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := start(ctx, t, "rollout", "status", "rollout/demo", "-n", ns, "--timeout", "90s")
	eventually(t, "the first frame", func() bool { return strings.Contains(p.stdout.String(), "StepUpgrade") })
	setStep(t, ro, 2, rolloutsv1beta1.CanaryStepStatePaused)
	eventually(t, "the timed pause", func() bool { return strings.Contains(p.stdout.String(), "StepPaused") })
	setStep(t, ro, 3, rolloutsv1beta1.CanaryStepStateCompleted)
	r := p.wait(t)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "Healthy, step 3/3 Completed\nDone: the release completed\n") {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", r.code, r.stderr, r.stdout)
	}
}

// TestApproveWait approves and returns only once the next step went past StepUpgrade.
func TestApproveWait(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	ro := createRollout(t, ns, "demo", false)
	setStep(t, ro, 1, rolloutsv1beta1.CanaryStepStatePaused)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := start(ctx, t, "rollout", "approve", "rollout/demo", "-n", ns, "--wait", "--timeout", "90s")
	eventually(t, "the approval", func() bool {
		return getRollout(t, ns, "demo").Status.CanaryStatus.CurrentStepState == rolloutsv1beta1.CanaryStepStateReady
	})
	setStep(t, ro, 2, rolloutsv1beta1.CanaryStepStateUpgrade)
	eventually(t, "the CLI to see step 2 upgrading", func() bool { return strings.Contains(p.stdout.String(), "step 2/3 StepUpgrade") })
	setStep(t, ro, 2, rolloutsv1beta1.CanaryStepStateTrafficRouting)
	r := p.wait(t)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "rollout.rollouts.kruise.io/demo approved\n") ||
		!strings.HasSuffix(r.stdout, "Ready: step 1 was approved and step 2 is StepTrafficRouting\n") {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", r.code, r.stderr, r.stdout)
	}
}

func TestVersion(t *testing.T) {
	needCluster(t)
	r := kruise(t, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "kubectl-kruise (Flotilla) ") {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
}

// The seed types `kubectl kruise rollout approve rollout`, a resource type with no name: as upstream's plugin,
// that approves every Rollout of the namespace, and the other rollout verbs take a whole kind the same way.
func TestVerbsOnAWholeKind(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	first, second := createRollout(t, ns, "first", false), createRollout(t, ns, "second", true)
	setStep(t, first, 1, rolloutsv1beta1.CanaryStepStatePaused)
	setStep(t, second, 1, rolloutsv1beta1.CanaryStepStatePaused)
	r := kruise(t, "rollout", "approve", "rollout", "-n", ns)
	if r.code != 0 || r.stdout != "rollout.rollouts.kruise.io/first approved\nrollout.rollouts.kruise.io/second approved\n" {
		t.Fatalf("approve rollout: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if a, b := getRollout(t, ns, "first").Status.CanaryStatus, getRollout(t, ns, "second").Status.BlueGreenStatus; a.CurrentStepState != rolloutsv1beta1.CanaryStepStateReady ||
		b.CurrentStepState != rolloutsv1beta1.CanaryStepStateReady {
		t.Errorf("after approving the kind: %s and %s, want StepReady for both", a.CurrentStepState, b.CurrentStepState)
	}
	if r := kruise(t, "rollout", "pause", "rollouts", "-n", ns); r.code != 0 || strings.Count(r.stdout, " paused\n") != 2 {
		t.Errorf("pause rollouts: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !getRollout(t, ns, "first").Spec.Strategy.Paused || !getRollout(t, ns, "second").Spec.Strategy.Paused {
		t.Error("pause of the kind left a Rollout running")
	}
	empty := namespace(t)
	want := "error: no rollouts.rollouts.kruise.io found in namespace \"" + empty + "\"\n"
	if r := kruise(t, "rollout", "approve", "rollout", "-n", empty); r.code != 1 || r.stderr != want {
		t.Errorf("approve rollout in an empty namespace: exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
	}
	if r := kruise(t, "rollout", "status", "rollout", "-n", ns); r.code == 0 {
		t.Errorf("status of a whole kind: exit 0, stdout %q; status takes one Rollout, as upstream's", r.stdout)
	}
}
