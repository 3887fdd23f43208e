package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// exitInterrupted is the shell's code for a command ended by Ctrl-C.
const exitInterrupted = 130

type statusOptions struct {
	watch          bool
	timeout        time.Duration
	successOnPause bool
}

func newStatusCommand(a *app) *cobra.Command {
	o := &statusOptions{watch: true}
	cmd := &cobra.Command{
		Use:   "status (TYPE NAME | TYPE/NAME) [flags]",
		Short: "Show the status of the rollout",
		Long: `Show the status of the rollout.

Prints the Rollout's steps, the current step's state and the progress of the current batch (updated and
ready pods of the batch's desired count, from the BatchRelease). By default 'rollout status' watches the
Rollout until the release is done, fails or waits for a person, redrawing the view on a terminal and
appending one line per change otherwise (CI logs). Use --watch=false to print the status once.

For a workload (cloneset, asts, deployment, statefulset, daemonset) it prints one line per change of the
workload's own update, as kubectl does, until it is done: the new spec observed by the controller,
replicas minus partition pods updated and, unless the update is in place (InPlaceIfPossible,
InPlaceOnly), every pod ready. Advanced DaemonSets are not supported. The exit codes are the same; a
workload whose update is paused exits 3, and a Deployment past its progress deadline exits 2.

Exit codes:
  0  done: the Rollout is Healthy and the release Completed (or the Rollout is disabled)
  1  error: bad arguments, an API error, or the Rollout does not exist
  2  failed: the release was cancelled or rolled back (condition Succeeded=False), the workload is gone,
     or the Rollout is stalled (condition Stalled, e.g. TrafficRoutingFailed, BatchReleaseFailed)
  3  paused: a step waits for approval, or the Rollout is paused (spec.strategy.paused);
     --success-on-pause turns this into 0
  4  not done: still in progress when --timeout ran out, or with --watch=false`,
		Example: `  # Watch the Rollout "demo" until it is done, fails or waits for approval
  kubectl-kruise rollout status rollout/demo

  # In CI: give up after 15 minutes, and treat a step waiting for approval as success
  kubectl-kruise rollout status rollout/demo --timeout 15m --success-on-pause

  # Print the status once
  kubectl-kruise rollout status rollout/demo --watch=false

  # Watch a CloneSet's update until every pod is updated
  kubectl-kruise rollout status cloneset/web --timeout 10m`,
		DisableFlagsInUseLine: true,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return a.completeRollouts(cmd, args, toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runStatus(cmd.Context(), args, o)
		},
	}
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", o.watch, "Watch the status of the rollout until it's done.")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 0, "The length of time to wait before ending watch, zero means never. Any other values should contain a corresponding time unit (e.g. 1s, 2m, 3h).")
	cmd.Flags().BoolVar(&o.successOnPause, "success-on-pause", false, "Exit 0 when the Rollout waits for approval or is paused.")
	return cmd
}

func (a *app) runStatus(ctx context.Context, args []string, o *statusOptions) error {
	targets, err := parseResources(args)
	if err != nil {
		return err
	}
	switch {
	case len(targets) != 1 && targets[0].Kind == kindRollout:
		return fmt.Errorf("rollout status takes a single Rollout, got %d", len(targets))
	case len(targets) != 1:
		return fmt.Errorf("rollout status takes a single resource, got %d", len(targets))
	case targets[0].Kind != kindRollout:
		return a.runWorkloadStatus(ctx, targets[0], o)
	}
	return a.runRolloutStatus(ctx, targets[0].Name, o)
}

func (a *app) runRolloutStatus(ctx context.Context, name string, o *statusOptions) error {
	api, err := a.api()
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(ctx, o.timeout)
	defer cancel()
	view := newLiveView(a.streams.Out)
	var last snapshot
	code := exitNotDone
	err = a.poll(ctx, o.watch, func(ctx context.Context) (bool, error) {
		s, err := a.look(ctx, api, name)
		if err != nil {
			return false, err
		}
		last = s
		view.Show(renderStatus(s), summaryLine(s))
		var final bool
		code, final = exitCodeFor(s.Verdict, o.successOnPause)
		return final || !o.watch, nil
	})
	return finish(view, last, code, err)
}

// finish closes a watch: the result line and the exit code, or why it stopped early.
func finish(view *liveView, last snapshot, code int, err error) error {
	switch {
	case err == nil:
		view.Finish(resultLine(last, "kubectl-kruise"))
		return withCode(code, nil)
	case errors.Is(err, context.DeadlineExceeded) && last.Rollout != nil:
		view.Finish("Timed out: " + last.Verdict.Reason)
		return withCode(exitNotDone, nil)
	case errors.Is(err, context.DeadlineExceeded):
		return withCode(exitNotDone, fmt.Errorf("timed out before the Rollout could be read"))
	case errors.Is(err, context.Canceled):
		return withCode(exitInterrupted, fmt.Errorf("interrupted"))
	default:
		return err
	}
}

// look reads the Rollout and its BatchRelease once. The BatchRelease only adds detail: failing to read
// it (RBAC, a race with its deletion) shows the Rollout's own counts instead.
func (a *app) look(ctx context.Context, api rolloutAPI, name string) (snapshot, error) {
	ro, err := api.GetRollout(ctx, name)
	if err != nil {
		return snapshot{}, err
	}
	br, err := api.GetBatchRelease(ctx, name)
	if err != nil {
		br = nil
	}
	v := decide(ro)
	if v.Outcome == outcomeDone {
		v = pendingRelease(ctx, api, ro, v)
	}
	s := snapshot{Rollout: ro, Batch: br, Verdict: v, Now: a.clock.Now()}
	if analyses, err := api.Analyses(ctx, name); err == nil && len(analyses) > 0 {
		// The view goes on without it when it cannot be read, as without the BatchRelease.
		s.Analysis = &analyses[0]
	}
	return s, nil
}

// pendingRelease keeps a finished-looking Rollout in progress while its workload carries the in-progressing
// mark of a release the Rollout has not picked up yet: the workload webhook sets it in the very request that
// changed the template, so a status run right after `kubectl set image` waits for that release instead of
// reporting the previous one done. A workload that cannot be read leaves the verdict as it was.
func pendingRelease(ctx context.Context, api rolloutAPI, ro *rolloutsv1beta1.Rollout, v verdict) verdict {
	annotations, err := api.WorkloadAnnotations(ctx, ro.Spec.WorkloadRef)
	if err != nil || !marksReleaseOf(annotations[rolloutsv1beta1.InProgressingAnnotation], ro.Name) {
		return v
	}
	return verdict{outcomeProgressing, "the workload's new version is about to be released"}
}

// marksReleaseOf reports whether an in-progressing annotation names the Rollout.
func marksReleaseOf(raw, rollout string) bool {
	var mark struct {
		RolloutName string `json:"rolloutName"`
	}
	return raw != "" && json.Unmarshal([]byte(raw), &mark) == nil && mark.RolloutName == rollout
}

// poll calls step every interval until it reports done or fails, or ctx ends. Once a watch has seen the
// Rollout, API errors that may pass (timeouts, a restarting apiserver) are reported once and retried; a
// first look that fails (a wrong server, a missing CRD) ends the command at once.
func (a *app) poll(ctx context.Context, watch bool, step func(context.Context) (bool, error)) error {
	var reported string
	seen := false
	for {
		done, err := step(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && (!watch || !seen || !transient(err)) {
			return err
		}
		seen = seen || err == nil
		if err != nil && err.Error() != reported {
			fmt.Fprintf(a.streams.ErrOut, "warning: %v (retrying)\n", err)
			reported = err.Error()
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.clock.After(a.interval):
		}
	}
}

// permanentError marks an error no retry can fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// transient: an error a later attempt may not meet.
func transient(err error) bool {
	var p *permanentError
	return !errors.As(err, &p) && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) &&
		!apierrors.IsBadRequest(err) && !apierrors.IsMethodNotSupported(err)
}

// waitBatch watches an approved Rollout until the next step's batch is in place.
func (a *app) waitBatch(ctx context.Context, api rolloutAPI, name string, appr approval, timeout time.Duration, out io.Writer) error {
	ctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	view := newLiveView(out)
	var last snapshot
	code := exitNotDone
	err := a.poll(ctx, true, func(ctx context.Context) (bool, error) {
		s, err := a.look(ctx, api, name)
		if err != nil {
			return false, err
		}
		last = s
		view.Show(renderStatus(s), summaryLine(s))
		var final bool
		code, final, err = waitVerdict(s, appr)
		return final, err
	})
	if err == nil && code == exitOK {
		view.Finish(readyLine(last, appr))
		return nil
	}
	return finish(view, last, code, err)
}

// waitVerdict decides an approve --wait: ready, failed, paused by spec, or not yet.
func waitVerdict(s snapshot, appr approval) (int, bool, error) {
	if s.Verdict.Outcome == outcomeFailed {
		return exitFailed, true, nil
	}
	ready, err := batchReadyAfter(s.Rollout, appr)
	switch {
	case err != nil:
		return exitError, true, &permanentError{err}
	case ready:
		return exitOK, true, nil
	case s.Verdict.Outcome == outcomePaused:
		return exitPaused, true, nil
	default:
		return exitNotDone, false, nil
	}
}

func readyLine(s snapshot, appr approval) string {
	sub := s.Rollout.Status.GetSubStatus()
	if s.Verdict.Outcome == outcomeDone || sub == nil {
		return "Done: the release completed"
	}
	return fmt.Sprintf("Ready: step %d was approved and step %d is %s", appr.Step, sub.CurrentStepIndex, stepStateText(s, sub))
}

// withTimeout bounds ctx by d; zero means no bound, as kubectl's --timeout.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// runWorkloadStatus follows a workload's own update, as kubectl's status viewers do: one line each time
// the progress changes, with the same exit codes as for a Rollout.
func (a *app) runWorkloadStatus(ctx context.Context, t target, o *statusOptions) error {
	api, err := a.workloads()
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(ctx, o.timeout)
	defer cancel()
	var last *workloadProgress
	code := exitNotDone
	err = a.poll(ctx, o.watch, func(ctx context.Context) (bool, error) {
		p, err := a.lookWorkload(ctx, api, t)
		if err != nil {
			return false, err
		}
		if last == nil || p.Message != last.Message {
			fmt.Fprintln(a.streams.Out, p.Message)
		}
		last = &p
		var final bool
		code, final = exitCodeFor(verdict{Outcome: p.Outcome, Reason: p.Message}, o.successOnPause)
		return final || !o.watch, nil
	})
	return finishWorkload(last, code, err)
}

// lookWorkload reads and judges the workload once; a workload no viewer understands is not retried.
func (a *app) lookWorkload(ctx context.Context, api workloadAPI, t target) (workloadProgress, error) {
	obj, err := api.Get(ctx, t.Kind.Resource, t.Name)
	if err != nil {
		return workloadProgress{}, err
	}
	p, err := workloadStatus(t.Kind, obj)
	if err != nil {
		return p, &permanentError{fmt.Errorf("%s: %w", t, err)}
	}
	return p, nil
}

func finishWorkload(last *workloadProgress, code int, err error) error {
	switch {
	case err == nil:
		return withCode(code, nil)
	case errors.Is(err, context.DeadlineExceeded) && last != nil:
		return withCode(exitNotDone, fmt.Errorf("timed out waiting for the rollout to finish"))
	case errors.Is(err, context.DeadlineExceeded):
		return withCode(exitNotDone, fmt.Errorf("timed out before the workload could be read"))
	case errors.Is(err, context.Canceled):
		return withCode(exitInterrupted, fmt.Errorf("interrupted"))
	default:
		return err
	}
}
