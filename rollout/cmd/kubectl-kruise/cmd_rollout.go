package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/retry"
)

func newRolloutCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout SUBCOMMAND",
		Short: "Manage the rollout of a resource",
		Long: `Manage the rollout of a resource.

Valid resource types include:

  * deployments (deploy)
  * daemonsets (ds)
  * statefulsets (sts)
  * clonesets (cloneset, clone, cs)
  * statefulsets.apps.kruise.io (asts)
  * daemonsets.apps.kruise.io (ads, daemon)
  * rollouts.rollouts.kruise.io (rollout, ro)

Given a resource type without a name, approve, pause, resume, restart, history, undo and rollback act on every
object of that type in the namespace, as upstream's plugin does.`,
		Example: `  # Approve the paused step of a Rollout
  kubectl-kruise rollout approve rollout/demo

  # Approve every Rollout of the namespace that waits for approval
  kubectl-kruise rollout approve rollout

  # Watch a Rollout until it finishes, fails or waits for approval
  kubectl-kruise rollout status rollout/demo

  # Roll a CloneSet back to its previous revision
  kubectl-kruise rollout undo cloneset/abc`,
		DisableFlagsInUseLine: true,
		Args:                  cobra.NoArgs,
		RunE:                  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newApproveCommand(a), newPauseCommand(a, true), newPauseCommand(a, false), newStatusCommand(a),
		newRestartCommand(a), newHistoryCommand(a), newUndoCommand(a), newRollbackCommand(a), newRetryCommand(a))
	return cmd
}

type approveOptions struct {
	pf      *genericclioptions.PrintFlags
	wait    bool
	timeout time.Duration
}

func newApproveCommand(a *app) *cobra.Command {
	o := &approveOptions{pf: genericclioptions.NewPrintFlags("approved")}
	cmd := &cobra.Command{
		Use:   "approve RESOURCE",
		Short: "Approve a resource",
		Long: `Approve a resource which can be continued.

A Rollout step whose pause has no duration waits in the StepPaused state until it is approved. Approving
moves it to StepReady (a merge patch of status.canaryStatus.currentStepState, or of
status.blueGreenStatus.currentStepState for a blue-green release), and the Rollout goes on with the next
step. A Rollout whose current step is not in StepPaused is not changed and the command fails.

A release its RolloutAnalysis aborted (condition Progressing with reason Aborted) is refused as well, though its
step shows StepPaused: the abort would hold the step again. Release it again with "kubectl-kruise rollout retry"
or by reverting the revision. Given a resource type without a name, such Rollouts are reported and left as they
are while the others are approved.

With --wait the command returns once the next step's batch is in place (the Rollout went past StepUpgrade
of a later step) or the release completed. Exit codes with --wait: 0 ready, 1 error, 2 the release failed
or was cancelled, 3 the Rollout was paused (spec.strategy.paused), 4 --timeout ran out.`,
		Example: `  # Approve the paused step of the Rollout "demo" in namespace "ns-demo"
  kubectl-kruise rollout approve rollout/demo -n ns-demo

  # Approve and wait up to ten minutes for the next batch to be ready
  kubectl-kruise rollout approve rollout/demo --wait --timeout 10m`,
		DisableFlagsInUseLine: true,
		ValidArgsFunction:     a.completeRollouts,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runApprove(cmd.Context(), args, o)
		},
	}
	o.pf.AddFlags(cmd)
	cmd.Flags().BoolVar(&o.wait, "wait", false, "Wait until the batch of the next step is ready, or the release completed.")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 0, "With --wait, how long to wait; zero means never give up (e.g. 30s, 10m).")
	return cmd
}

func (a *app) runApprove(ctx context.Context, args []string, o *approveOptions) error {
	names, err := a.rolloutCollection(ctx, args)
	if err != nil {
		return err
	}
	if o.wait && len(names) > 1 {
		return fmt.Errorf("--wait takes a single Rollout, got %d", len(names))
	}
	api, printer, err := a.connect(o.pf)
	if err != nil {
		return err
	}
	var errs []error
	var last approval
	for _, name := range names {
		obj, appr, err := approveOne(ctx, api, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		last = appr
		if err := printer.PrintObj(obj, a.streams.Out); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 || !o.wait {
		return errors.Join(errs...)
	}
	return a.waitBatch(ctx, api, names[0], last, o.timeout, a.progressOut(o.pf))
}

// approveOne approves one Rollout, reading it again when it changed between the read and the patch.
func approveOne(ctx context.Context, api rolloutAPI, name string) (*unstructured.Unstructured, approval, error) {
	var obj *unstructured.Unstructured
	var appr approval
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ro, err := api.GetRollout(ctx, name)
		if err != nil {
			return err
		}
		if appr, err = planApproval(ro); err != nil {
			return fmt.Errorf("%s %q %w", rolloutsResource, name, err)
		}
		obj, err = api.PatchRolloutStatus(ctx, name, appr.Patch)
		return err
	})
	return obj, appr, err
}

func newPauseCommand(a *app, paused bool) *cobra.Command {
	verb, done := "resume", "resumed"
	short, long := "Resume a paused resource", `Resume a paused resource.

A paused resource continues its update once resumed: this clears spec.strategy.paused of a Rollout,
spec.paused of a Deployment, spec.updateStrategy.paused of a CloneSet and
spec.updateStrategy.rollingUpdate.paused of an Advanced StatefulSet or Advanced DaemonSet.`
	example := `  # Resume the Rollout "demo"
  kubectl-kruise rollout resume rollout/demo

  # Resume the update of the CloneSet "web"
  kubectl-kruise rollout resume cloneset/web`
	if paused {
		verb, done = "pause", "paused"
		short, long = "Mark the provided resource as paused", `Mark the provided resource as paused.

A paused resource keeps its pods as they are until "kubectl-kruise rollout resume" resumes it: a Rollout
stays at its current step (spec.strategy.paused), a Deployment stops rolling out (spec.paused), a
CloneSet stops updating pods (spec.updateStrategy.paused), and so do an Advanced StatefulSet and an
Advanced DaemonSet (spec.updateStrategy.rollingUpdate.paused). Native StatefulSets and DaemonSets
cannot be paused.`
		example = `  # Pause the Rollout "demo"
  kubectl-kruise rollout pause rollout/demo

  # Stop the update of the CloneSet "web"; its pods keep their revisions until it is resumed
  kubectl-kruise rollout pause cloneset/web`
	}
	pf := genericclioptions.NewPrintFlags(done)
	cmd := &cobra.Command{
		Use:                   verb + " RESOURCE",
		Short:                 short,
		Long:                  long,
		Example:               example,
		DisableFlagsInUseLine: true,
		ValidArgsFunction:     a.completeRollouts,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runPause(cmd.Context(), args, paused, pf)
		},
	}
	pf.AddFlags(cmd)
	return cmd
}

func (a *app) runPause(ctx context.Context, args []string, paused bool, pf *genericclioptions.PrintFlags) error {
	targets, err := a.collection(ctx, args)
	if err != nil {
		return err
	}
	if err := checkPrintFlags(pf); err != nil {
		return err
	}
	done := "resumed"
	if paused {
		done = "paused"
	}
	return eachWrite(a, pf, dryRunNone, targets, func(t target) (runtime.Object, string, error) {
		obj, err := a.pauseTarget(ctx, t, paused)
		return obj, done, err
	})
}

// pauseTarget pauses or resumes one Rollout or workload.
func (a *app) pauseTarget(ctx context.Context, t target, paused bool) (runtime.Object, error) {
	if t.Kind == kindRollout {
		api, err := a.api()
		if err != nil {
			return nil, err
		}
		return pauseOne(ctx, api, t.Name, paused)
	}
	api, err := a.workloads()
	if err != nil {
		return nil, err
	}
	obj, _, err := applyTo(ctx, api, t, dryRunNone, func(o *unstructured.Unstructured) (edit, error) {
		return planWorkloadPause(t.Kind, o, paused)
	})
	return obj, err
}

func pauseOne(ctx context.Context, api rolloutAPI, name string, paused bool) (*unstructured.Unstructured, error) {
	ro, err := api.GetRollout(ctx, name)
	if err != nil {
		return nil, err
	}
	patch, err := planPause(ro, paused)
	if err != nil {
		return nil, fmt.Errorf("%s %q %w", rolloutsResource, name, err)
	}
	return api.PatchRollout(ctx, name, patch)
}

// connect builds the API client and the printer of -o.
func (a *app) connect(pf *genericclioptions.PrintFlags) (rolloutAPI, printers.ResourcePrinter, error) {
	printer, err := pf.ToPrinter()
	if err != nil {
		return nil, nil, fmt.Errorf("output format: %w", err)
	}
	api, err := a.api()
	if err != nil {
		return nil, nil, err
	}
	return api, printer, nil
}

// progressOut keeps machine-readable -o output clean: progress then goes to stderr.
func (a *app) progressOut(pf *genericclioptions.PrintFlags) io.Writer {
	if pf.OutputFormat != nil && *pf.OutputFormat != "" && *pf.OutputFormat != "name" {
		return a.streams.ErrOut
	}
	return a.streams.Out
}
