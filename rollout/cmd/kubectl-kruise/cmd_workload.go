package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/util/retry"
)

func newRestartCommand(a *app) *cobra.Command {
	pf := genericclioptions.NewPrintFlags("restarted")
	cmd := &cobra.Command{
		Use:   "restart RESOURCE",
		Short: "Restart a resource",
		Long: `Restart a resource.

Resource will be rollout restarted: every pod is replaced following the workload's update strategy.
Deployments, StatefulSets and DaemonSets get the kubectl.kubernetes.io/restartedAt annotation in their
pod template, as with kubectl. CloneSets, Advanced StatefulSets and Advanced DaemonSets get the
kubectl.kruise.io/restartedAt template annotation and a RESTARTED_AT variable in every container: the
annotation alone would be applied in place and restart nothing.
A paused Deployment cannot be restarted.`,
		Example: `  # Restart a deployment
  kubectl-kruise rollout restart deployment/nginx

  # Restart a CloneSet
  kubectl-kruise rollout restart cloneset/abc

  # Restart an Advanced StatefulSet
  kubectl-kruise rollout restart asts/abc`,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runEdits(cmd.Context(), args, pf, dryRunNone, "restarted", func(t target) planner {
				return func(obj *unstructured.Unstructured) (edit, error) { return planRestart(t.Kind, obj, a.clock.Now()) }
			})
		},
	}
	pf.AddFlags(cmd)
	return cmd
}

// runEdits applies one planned edit to every target and prints each result. A target with nothing to
// change is not written and not printed, as kubectl's set commands do.
func (a *app) runEdits(ctx context.Context, args []string, pf *genericclioptions.PrintFlags, dry dryRunMode, done string, plan func(target) planner) error {
	targets, err := a.collection(ctx, args)
	if err != nil {
		return err
	}
	return a.editTargets(ctx, targets, pf, dry, done, plan)
}

func (a *app) editTargets(ctx context.Context, targets []target, pf *genericclioptions.PrintFlags, dry dryRunMode, done string, plan func(target) planner) error {
	if err := checkPrintFlags(pf); err != nil {
		return err
	}
	api, err := a.workloads()
	if err != nil {
		return err
	}
	return eachWrite(a, pf, dry, targets, func(t target) (runtime.Object, string, error) {
		obj, changed, err := applyTo(ctx, api, t, dry, plan(t))
		if !changed {
			return obj, "", err
		}
		return obj, done, err
	})
}

type historyOptions struct {
	pf       *genericclioptions.PrintFlags
	revision int64
}

func newHistoryCommand(a *app) *cobra.Command {
	o := &historyOptions{pf: genericclioptions.NewPrintFlags("")}
	cmd := &cobra.Command{
		Use:   "history (TYPE NAME | TYPE/NAME) [flags]",
		Short: "View rollout history",
		Long: `View previous rollout revisions and configurations.

Revisions come from the ControllerRevisions the workload controls (the ReplicaSets of a Deployment),
numbered as the controller numbered them; the CHANGE-CAUSE column shows their kubernetes.io/change-cause
annotation. A Rollout shows the history of its workload.`,
		Example: `  # View the rollout history of a CloneSet
  kubectl-kruise rollout history cloneset/abc

  # View the details of revision 3 of an Advanced StatefulSet
  kubectl-kruise rollout history asts/abc --revision=3`,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runHistory(cmd.Context(), args, o)
		},
	}
	cmd.Flags().Int64Var(&o.revision, "revision", 0, "See the details, including podTemplate of the revision specified")
	o.pf.AddFlags(cmd)
	return cmd
}

func (a *app) runHistory(ctx context.Context, args []string, o *historyOptions) error {
	if o.revision < 0 {
		return fmt.Errorf("revision must be a positive integer: %v", o.revision)
	}
	targets, err := a.workloadTargets(ctx, args)
	if err != nil {
		return err
	}
	api, err := a.workloads()
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range targets {
		if err := a.historyOne(ctx, api, t, o); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (a *app) historyOne(ctx context.Context, api workloadAPI, t target, o *historyOptions) error {
	obj, err := api.Get(ctx, t.Kind.Resource, t.Name)
	if err != nil {
		return err
	}
	revs, err := revisionsOf(ctx, api, t.Kind, obj)
	if err != nil {
		return err
	}
	text, err := historyText(revs, o.revision)
	if err != nil {
		return err
	}
	return a.printAs(o.pf, obj, text, dryRunNone)
}

// historyText is what kubectl prints after the workload's name: the revision table, or one revision.
func historyText(revs []revision, number int64) (string, error) {
	if number == 0 {
		return "\n" + historyTable(revs), nil
	}
	r, ok := findRevision(revs, number)
	if !ok {
		return "", fmt.Errorf("unable to find the specified revision")
	}
	text, err := describeRecordedTemplate(r.Template)
	return fmt.Sprintf("with revision #%d\n%s", number, text), err
}

// revisionsOf reads a workload's history: the ControllerRevisions or ReplicaSets its selector matches
// and it controls.
func revisionsOf(ctx context.Context, api workloadAPI, k *workloadKind, obj *unstructured.Unstructured) ([]revision, error) {
	if k.History == historyNone {
		return nil, fmt.Errorf("no history viewer has been implemented for %q", k.GroupResource())
	}
	selector, err := selectorOf(obj)
	if err != nil {
		return nil, err
	}
	if k.History == historyReplicaSets {
		items, err := api.List(ctx, replicaSetsGVR, selector)
		if err != nil {
			return nil, err
		}
		return revisionsFromReplicaSets(items, obj.GetUID())
	}
	items, err := api.List(ctx, controllerRevisionsGVR, selector)
	if err != nil {
		return nil, err
	}
	return revisionsFromControllerRevisions(items, obj.GetUID())
}

// selectorOf is the workload's spec.selector as a label selector string.
func selectorOf(obj *unstructured.Unstructured) (string, error) {
	raw, found, err := unstructured.NestedMap(obj.Object, "spec", "selector")
	if err != nil || !found {
		return "", fmt.Errorf("%s %s has no spec.selector", obj.GetKind(), obj.GetName())
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return "", fmt.Errorf("decoding spec.selector: %w", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return "", fmt.Errorf("spec.selector: %w", err)
	}
	return sel.String(), nil
}

// workloadTargets parses the arguments and replaces each Rollout by the workload it references, once.
func (a *app) workloadTargets(ctx context.Context, args []string) ([]target, error) {
	targets, err := a.collection(ctx, args)
	if err != nil {
		return nil, err
	}
	out := make([]target, 0, len(targets))
	for _, t := range targets {
		if t.Kind == kindRollout {
			if t, err = a.referencedWorkload(ctx, t.Name); err != nil {
				return nil, err
			}
		}
		out = append(out, t)
	}
	return dedupeTargets(out), nil
}

func (a *app) referencedWorkload(ctx context.Context, rollout string) (target, error) {
	api, err := a.api()
	if err != nil {
		return target{}, err
	}
	ro, err := api.GetRollout(ctx, rollout)
	if err != nil {
		return target{}, err
	}
	k, err := kindForRef(ro.Spec.WorkloadRef)
	if err != nil {
		return target{}, fmt.Errorf("%s %q: %w", rolloutsResource, rollout, err)
	}
	return target{Kind: k, Name: ro.Spec.WorkloadRef.Name}, nil
}

type undoOptions struct {
	pf         *genericclioptions.PrintFlags
	toRevision int64
	fast       bool
	dryRun     string
}

func newUndoCommand(a *app) *cobra.Command {
	o := &undoOptions{pf: genericclioptions.NewPrintFlags("rolled back")}
	cmd := &cobra.Command{
		Use:   "undo (TYPE NAME | TYPE/NAME) [flags]",
		Short: "Undo a previous rollout",
		Long: `Rollback to a previous rollout.

The workload's pod template is replaced by the one recorded in the chosen revision (see "rollout
history"); by default the revision before the latest. A Rollout is rolled back through its workload.

With --fast, a Rollout in the middle of a release (blue-green in particular) goes back to an earlier
step instead: the previous step that sends no traffic and has the most replicas, through
status.blueGreenStatus.nextStepIndex (status.canaryStatus.nextStepIndex for a canary release).`,
		Example: `  # Rollback to the previous cloneset
  kubectl-kruise rollout undo cloneset/abc

  # Rollback to the previous Advanced StatefulSet
  kubectl-kruise rollout undo asts/abc

  # Rollback to daemonset revision 3
  kubectl-kruise rollout undo daemonset/abc --to-revision=3

  # Rollback to the previous deployment with dry-run
  kubectl-kruise rollout undo --dry-run=server deployment/abc

  # Rollback to workload via rollout api object
  kubectl-kruise rollout undo rollout/abc

  # Fast rollback during blue-green release (will go back to a previous step with no traffic and most replicas)
  kubectl-kruise rollout undo rollout/abc --fast`,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runUndo(cmd.Context(), args, o)
		},
	}
	cmd.Flags().Int64Var(&o.toRevision, "to-revision", 0, "The revision to rollback to. Default to 0 (last revision).")
	cmd.Flags().BoolVar(&o.fast, "fast", false, "fast rollback for blue-green release")
	addDryRunFlag(cmd, &o.dryRun)
	o.pf.AddFlags(cmd)
	return cmd
}

func (a *app) runUndo(ctx context.Context, args []string, o *undoOptions) error {
	dry, err := parseDryRun(o.dryRun)
	if err != nil {
		return err
	}
	if err := checkPrintFlags(o.pf); err != nil {
		return err
	}
	if o.fast {
		return a.runStepJumps(ctx, args, o.pf, 0)
	}
	targets, err := a.workloadTargets(ctx, args)
	if err != nil {
		return err
	}
	api, err := a.workloads()
	if err != nil {
		return err
	}
	return eachWrite(a, o.pf, dry, targets, func(t target) (runtime.Object, string, error) {
		return undoOne(ctx, api, t, o.toRevision, dry)
	})
}

// undoOne rolls one workload back, planning again if it changed between the read and the write.
func undoOne(ctx context.Context, api workloadAPI, t target, to int64, dry dryRunMode) (*unstructured.Unstructured, string, error) {
	var out *unstructured.Unstructured
	var result string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := api.Get(ctx, t.Kind.Resource, t.Name)
		if err != nil {
			return err
		}
		revs, err := revisionsOf(ctx, api, t.Kind, obj)
		if err != nil {
			return err
		}
		p, err := planUndo(t.Kind, obj, revs, to)
		if err != nil {
			return fmt.Errorf("%s %w", t, err)
		}
		out, result = obj, p.Result
		switch {
		case p.Edit.Patch == nil:
			return nil
		case dry == dryRunClient:
			out = p.Edit.Preview
			result, err = dryRunUndoText(p.Revision)
			return err
		}
		out, err = api.Patch(ctx, t.Kind.Resource, t.Name, patchRequest{Type: p.Edit.Type, Data: p.Edit.Patch, DryRun: dry == dryRunServer})
		return err
	})
	return out, result, err
}

func dryRunUndoText(r revision) (string, error) {
	text, err := describeRecordedTemplate(r.Template)
	return "will roll back to " + strings.TrimSuffix(text, "\n"), err
}

func newRollbackCommand(a *app) *cobra.Command {
	pf := genericclioptions.NewPrintFlags("rolled back")
	var step int32
	cmd := &cobra.Command{
		Use:   "rollback RESOURCE",
		Short: "Rollback a resource",
		Long: `Rollback a rollout to a previous step during release progress.

You can rollback to a specific previous step using the --step flag. If not specified, kubectl-kruise will
look for a previous step that has no traffic and the most replicas to perform the rollback. The Rollout's
status.canaryStatus.nextStepIndex (status.blueGreenStatus.nextStepIndex for blue-green) is set to it.`,
		Example: `  # Rollback a kruise rollout named "rollout-demo" in "ns-demo" namespace
  kubectl-kruise rollout rollback rollout/rollout-demo -n ns-demo

  # Rollback a kruise rollout resource to a specific step
  kubectl-kruise rollout rollback rollout/rollout-demo --step 1`,
		DisableFlagsInUseLine: true,
		ValidArgsFunction:     a.completeRollouts,
		RunE: func(cmd *cobra.Command, args []string) error {
			if step == 0 || step < -1 {
				return fmt.Errorf("--step must be a step number (1 or more), got %d", step)
			}
			if err := checkPrintFlags(pf); err != nil {
				return err
			}
			return a.runStepJumps(cmd.Context(), args, pf, max(step, 0))
		},
	}
	cmd.Flags().Int32Var(&step, "step", -1, "Rollback to a specific previous step")
	pf.AddFlags(cmd)
	return cmd
}

// runStepJumps moves each Rollout's release back to step (0: picked as `undo --fast` does).
func (a *app) runStepJumps(ctx context.Context, args []string, pf *genericclioptions.PrintFlags, step int32) error {
	names, err := a.rolloutCollection(ctx, args)
	if err != nil {
		return err
	}
	api, err := a.api()
	if err != nil {
		return err
	}
	return eachWrite(a, pf, dryRunNone, names, func(name string) (runtime.Object, string, error) {
		return stepJumpOne(ctx, api, name, step)
	})
}

func stepJumpOne(ctx context.Context, api rolloutAPI, name string, step int32) (runtime.Object, string, error) {
	var out runtime.Object
	result := "rolled back"
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ro, err := api.GetRollout(ctx, name)
		if err != nil {
			return err
		}
		jump, err := planStepJump(ro, step)
		if err != nil {
			return fmt.Errorf("%s %q %w", rolloutsResource, name, err)
		}
		if jump.Already {
			out, result = ro, "already rolled back"
			return nil
		}
		out, err = api.PatchRolloutStatus(ctx, name, jump.Patch)
		return err
	})
	return out, result, err
}
