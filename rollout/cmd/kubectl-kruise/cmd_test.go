package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// fakeAPI serves a scripted sequence of Rollouts, one per read (the last one repeats), and records
// patches. A patch of the status or spec does not change what later reads return: the script does.
type fakeAPI struct {
	mu           sync.Mutex
	script       []*rolloutsv1beta1.Rollout
	errs         []error // errs[i] is returned by read i instead of a Rollout, when set
	reads        int
	batch        *rolloutsv1beta1.BatchRelease
	statusPatch  []string
	specPatch    []string
	patchFailure error
	// workloadAnnotations are the referenced workload's annotations.
	workloadAnnotations map[string]string
	// analyses are the namespace's RolloutAnalyses; analysisPatch records "name patch" per patch.
	analyses      []analysisv1alpha1.RolloutAnalysis
	analysisPatch []string
}

func (f *fakeAPI) Namespace() string { return "apps" }

func (f *fakeAPI) WorkloadAnnotations(context.Context, rolloutsv1beta1.ObjectRef) (map[string]string, error) {
	return f.workloadAnnotations, nil
}

func (f *fakeAPI) GetRollout(context.Context, string) (*rolloutsv1beta1.Rollout, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.reads
	f.reads++
	if i < len(f.errs) && f.errs[i] != nil {
		return nil, f.errs[i]
	}
	if len(f.script) == 0 {
		return nil, apierrors.NewNotFound(rolloutsv1beta1.Resource("rollouts"), "demo")
	}
	return f.script[min(i, len(f.script)-1)].DeepCopy(), nil
}

func (f *fakeAPI) GetBatchRelease(context.Context, string) (*rolloutsv1beta1.BatchRelease, error) {
	return f.batch, nil
}

func (f *fakeAPI) PatchRolloutStatus(_ context.Context, name string, patch []byte) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusPatch = append(f.statusPatch, string(patch))
	return patched(name), f.patchFailure
}

func (f *fakeAPI) PatchRollout(_ context.Context, name string, patch []byte) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.specPatch = append(f.specPatch, string(patch))
	return patched(name), f.patchFailure
}

func (f *fakeAPI) ListRolloutNames(context.Context) ([]string, error) {
	return []string{"demo", "other"}, nil
}

func (f *fakeAPI) Analyses(_ context.Context, rollout string) ([]analysisv1alpha1.RolloutAnalysis, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []analysisv1alpha1.RolloutAnalysis
	for _, ra := range f.analyses {
		if ra.Spec.RolloutRef.Name == rollout {
			out = append(out, ra)
		}
	}
	return bindingFirst(out), nil
}

func (f *fakeAPI) PatchAnalysis(_ context.Context, name string, patch []byte) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.analysisPatch = append(f.analysisPatch, name+" "+string(patch))
	return patched(name), f.patchFailure
}

func patched(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("rollouts.kruise.io/v1beta1")
	u.SetKind("Rollout")
	u.SetName(name)
	u.SetNamespace("apps")
	return u
}

// runFake runs a command line against api, polling every millisecond.
func runFake(t *testing.T, api *fakeAPI, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	d := deps{
		newAPI:   func(*genericclioptions.ConfigFlags) (rolloutAPI, error) { return api, nil },
		clock:    fixedNowClock{},
		interval: time.Millisecond,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code := run(ctx, args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, d)
	return code, out.String(), errOut.String()
}

// fixedNowClock waits for real but always reads testNow, so pause countdowns render the same every run.
type fixedNowClock struct{ clock.RealClock }

func (fixedNowClock) Now() time.Time { return testNow }

func TestStatusCommand(t *testing.T) {
	upgrading := atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStateUpgrade)
	timedPause := atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStatePaused)
	completed := atStep(canaryRollout(), 3, rolloutsv1beta1.CanaryStepStateCompleted)
	approval := atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStatePaused)
	serverErr := apierrors.NewInternalError(errors.New("etcd is restarting"))
	tests := []struct {
		name     string
		api      *fakeAPI
		args     []string
		wantCode int
		golden   string
		wantErr  string
	}{
		{name: "watch until done", api: &fakeAPI{script: []*rolloutsv1beta1.Rollout{upgrading, upgrading, timedPause, completed}},
			args: []string{"rollout/demo"}, wantCode: exitOK, golden: "commands/status-watch-done.golden"},
		{name: "stops at approval", api: &fakeAPI{script: []*rolloutsv1beta1.Rollout{upgrading, approval}},
			args: []string{"rollout", "demo"}, wantCode: exitPaused, golden: "commands/status-approval.golden"},
		{name: "success on pause", api: &fakeAPI{script: []*rolloutsv1beta1.Rollout{approval}},
			args: []string{"rollouts.rollouts.kruise.io/demo", "--success-on-pause"}, wantCode: exitOK},
		{name: "once", api: &fakeAPI{script: []*rolloutsv1beta1.Rollout{upgrading, completed}},
			args: []string{"rollout/demo", "--watch=false"}, wantCode: exitNotDone, golden: "commands/status-once.golden"},
		{name: "timeout", api: &fakeAPI{script: []*rolloutsv1beta1.Rollout{upgrading}},
			args: []string{"rollout/demo", "--timeout", "30ms"}, wantCode: exitNotDone, golden: "commands/status-timeout.golden"},
		{name: "server error retried", api: &fakeAPI{script: []*rolloutsv1beta1.Rollout{upgrading, completed}, errs: []error{nil, serverErr, serverErr}},
			args: []string{"rollout/demo"}, wantCode: exitOK, wantErr: "warning: Internal error occurred: etcd is restarting (retrying)\n"},
		{name: "first read fails", api: &fakeAPI{script: []*rolloutsv1beta1.Rollout{completed}, errs: []error{serverErr}},
			args: []string{"rollout/demo"}, wantCode: exitError, wantErr: "error: Internal error occurred: etcd is restarting\n"},
		{name: "not found", api: &fakeAPI{}, args: []string{"rollout/demo"}, wantCode: exitError,
			wantErr: "error: rollouts.rollouts.kruise.io \"demo\" not found\n"},
		{name: "two rollouts", api: &fakeAPI{}, args: []string{"rollout/a", "rollout/b"}, wantCode: exitError,
			wantErr: "error: rollout status takes a single Rollout, got 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runFake(t, tt.api, append([]string{"rollout", "status"}, tt.args...)...)
			if code != tt.wantCode || errOut != tt.wantErr {
				t.Fatalf("exit %d, stderr %q; want %d, %q\nstdout:\n%s", code, errOut, tt.wantCode, tt.wantErr, out)
			}
			if tt.golden != "" {
				checkGolden(t, tt.golden, out)
			}
		})
	}
}

func TestApproveCommand(t *testing.T) {
	paused := atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStatePaused)
	approved := atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStateReady)
	next := func(s rolloutsv1beta1.CanaryStepState) *rolloutsv1beta1.Rollout { return atStep(canaryRollout(), 2, s) }
	rolledBack := withCondition(atStep(canaryRollout(), 3, rolloutsv1beta1.CanaryStepStateCompleted),
		rolloutsv1beta1.RolloutConditionSucceeded, "False", "Rollback", "rolled back")
	const patch = `{"metadata":{"resourceVersion":"42"},"status":{"canaryStatus":{"currentStepState":"StepReady"}}}`
	tests := []struct {
		name        string
		script      []*rolloutsv1beta1.Rollout
		args        []string
		wantCode    int
		wantOut     string
		wantErr     string
		wantPatches []string
	}{
		{name: "approve", script: []*rolloutsv1beta1.Rollout{paused}, args: []string{"rollout/demo"},
			wantOut: "rollout.rollouts.kruise.io/demo approved\n", wantPatches: []string{patch}},
		{name: "refused", script: []*rolloutsv1beta1.Rollout{next(rolloutsv1beta1.CanaryStepStateUpgrade)}, args: []string{"rollout/demo"},
			wantCode: exitError,
			wantErr:  "error: rollouts.rollouts.kruise.io \"demo\" does not allow to approve, because current canary state is not 'StepPaused' (step 2 is StepUpgrade)\n"},
		{name: "wait until the next batch", args: []string{"rollout/demo", "--wait"},
			script: []*rolloutsv1beta1.Rollout{paused, approved, next(rolloutsv1beta1.CanaryStepStateInit),
				next(rolloutsv1beta1.CanaryStepStateUpgrade), next(rolloutsv1beta1.CanaryStepStateTrafficRouting)},
			wantOut: "rollout.rollouts.kruise.io/demo approved\n" +
				"Rollout apps/demo: Progressing, canary (partition style), 3 steps\n" +
				"  STEP  REPLICAS  TRAFFIC  PAUSE     STATE\n" +
				"> 1     1         -        approval  StepReady\n" +
				"  2     50%       -        60s       -\n" +
				"  3     100%      -        -         -\n" +
				"Pods: 2 updated, 1 ready\n" +
				"Progressing, step 2/3 BeforeStepUpgrade, Pods: 2 updated, 1 ready\n" +
				"Progressing, step 2/3 StepUpgrade, Pods: 2 updated, 1 ready\n" +
				"Progressing, step 2/3 StepTrafficRouting, Pods: 2 updated, 1 ready\n" +
				"Ready: step 1 was approved and step 2 is StepTrafficRouting\n",
			wantPatches: []string{patch}},
		{name: "wait sees a rollback", args: []string{"rollout/demo", "--wait", "-o", "json"},
			script: []*rolloutsv1beta1.Rollout{paused, rolledBack}, wantCode: exitFailed, wantPatches: []string{patch}},
		{name: "wait times out", args: []string{"rollout/demo", "--wait", "--timeout=30ms", "-o", "name"},
			script: []*rolloutsv1beta1.Rollout{paused, approved}, wantCode: exitNotDone, wantPatches: []string{patch}},
		{name: "wait takes one", args: []string{"rollout", "a", "b", "--wait"}, wantCode: exitError,
			wantErr: "error: --wait takes a single Rollout, got 2\n"},
		{name: "aborted by its analysis", script: []*rolloutsv1beta1.Rollout{abortedAt(canaryRollout())}, args: []string{"rollout/demo"},
			wantCode: exitError,
			wantErr: "error: rollouts.rollouts.kruise.io \"demo\" does not allow to approve, because its analysis aborted the release: " +
				"analysis of step 2 (AnalysisRun demo-rev2-0-2) ended Failed; to release again: kubectl kruise rollout retry rollout/demo -n apps, or revert the revision\n"},
		{name: "aborted, with --wait", script: []*rolloutsv1beta1.Rollout{abortedAt(canaryRollout())}, args: []string{"rollout/demo", "--wait"},
			wantCode: exitError,
			wantErr: "error: rollouts.rollouts.kruise.io \"demo\" does not allow to approve, because its analysis aborted the release: " +
				"analysis of step 2 (AnalysisRun demo-rev2-0-2) ended Failed; to release again: kubectl kruise rollout retry rollout/demo -n apps, or revert the revision\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeAPI{script: tt.script}
			code, out, errOut := runFake(t, api, append([]string{"rollout", "approve"}, tt.args...)...)
			if code != tt.wantCode || (tt.wantErr != "" && errOut != tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want %d, %q\nstdout:\n%s", code, errOut, tt.wantCode, tt.wantErr, out)
			}
			if tt.wantOut != "" {
				if diff := cmp.Diff(tt.wantOut, out); diff != "" {
					t.Errorf("stdout (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tt.wantPatches, api.statusPatch); diff != "" {
				t.Errorf("status patches (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApproveWaitKeepsJSONOutputClean(t *testing.T) {
	api := &fakeAPI{script: []*rolloutsv1beta1.Rollout{
		atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStatePaused),
		atStep(canaryRollout(), 3, rolloutsv1beta1.CanaryStepStateCompleted),
	}}
	code, out, errOut := runFake(t, api, "rollout", "approve", "rollout/demo", "--wait", "-o", "json")
	if code != exitOK || !strings.HasPrefix(out, "{") || !strings.Contains(errOut, "Done: the release completed") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestPauseResumeCommands(t *testing.T) {
	paused := canaryRollout()
	paused.Spec.Strategy.Paused = true
	tests := []struct {
		name        string
		rollout     *rolloutsv1beta1.Rollout
		args        []string
		wantCode    int
		wantOut     string
		wantErr     string
		wantPatches []string
	}{
		{name: "pause", rollout: canaryRollout(), args: []string{"pause", "rollout/demo"},
			wantOut: "rollout.rollouts.kruise.io/demo paused\n", wantPatches: []string{`{"spec":{"strategy":{"paused":true}}}`}},
		{name: "resume", rollout: paused, args: []string{"resume", "rollout", "demo"},
			wantOut: "rollout.rollouts.kruise.io/demo resumed\n", wantPatches: []string{`{"spec":{"strategy":{"paused":false}}}`}},
		{name: "already paused", rollout: paused, args: []string{"pause", "rollout/demo"}, wantCode: exitError,
			wantErr: "error: rollouts.rollouts.kruise.io \"demo\" is already paused\n"},
		{name: "not paused", rollout: canaryRollout(), args: []string{"resume", "rollout/demo"}, wantCode: exitError,
			wantErr: "error: rollouts.rollouts.kruise.io \"demo\" is not paused\n"},
		{name: "several, one fails", rollout: canaryRollout(), args: []string{"resume", "rollout/a", "rollout/b"}, wantCode: exitError,
			wantErr: "error: rollouts.rollouts.kruise.io \"a\" is not paused\nerror: rollouts.rollouts.kruise.io \"b\" is not paused\n"},
		{name: "unknown kind", rollout: canaryRollout(), args: []string{"pause", "foo/web"}, wantCode: exitError,
			wantErr: "error: resource type \"foo\" is not supported: use " + supportedTypesText + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeAPI{script: []*rolloutsv1beta1.Rollout{tt.rollout}}
			code, out, errOut := runFake(t, api, append([]string{"rollout"}, tt.args...)...)
			if code != tt.wantCode || out != tt.wantOut || errOut != tt.wantErr {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantPatches, api.specPatch); diff != "" {
				t.Errorf("spec patches (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	code, out, _ := runFake(t, &fakeAPI{}, "__complete", "rollout", "approve", "")
	if code != exitOK || !strings.HasPrefix(out, "rollout/demo\nrollout/other\n:4\n") {
		t.Errorf("exit %d, completions:\n%s", code, out)
	}
}
