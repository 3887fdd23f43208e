package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/util/retry"
)

type scaleOptions struct {
	pf              *genericclioptions.PrintFlags
	replicas        int32
	currentReplicas int32
	resourceVersion string
	dryRun          string
}

func newScaleCommand(a *app) *cobra.Command {
	o := &scaleOptions{pf: genericclioptions.NewPrintFlags("scaled"), replicas: -1, currentReplicas: -1}
	cmd := &cobra.Command{
		Use:   "scale [--resource-version=version] [--current-replicas=count] --replicas=COUNT (TYPE NAME | TYPE/NAME)",
		Short: "Set a new size for a CloneSet, Advanced StatefulSet, Deployment or StatefulSet",
		Long: `Set a new size for a CloneSet, Advanced StatefulSet, Deployment or StatefulSet, through their scale
subresource.

Scale also allows users to specify one or more preconditions for the scale action. If --current-replicas
or --resource-version is specified, it is validated before the scale is attempted, and it is guaranteed
that the precondition holds true when the scale is sent to the server.`,
		Example: `  # Scale a CloneSet named 'foo' to 3
  kubectl-kruise scale --replicas=3 cloneset/foo

  # If the Advanced StatefulSet named 'mysql''s current size is 2, scale it to 3
  kubectl-kruise scale --current-replicas=2 --replicas=3 asts/mysql`,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runScale(cmd.Context(), args, o)
		},
	}
	cmd.Flags().Int32Var(&o.replicas, "replicas", o.replicas, "The new desired number of replicas. Required.")
	cmd.Flags().Int32Var(&o.currentReplicas, "current-replicas", o.currentReplicas, "Precondition for current size. Requires that the current size of the resource match this value in order to scale. -1 (default) for no condition.")
	cmd.Flags().StringVar(&o.resourceVersion, "resource-version", "", "Precondition for resource version. Requires that the current resource version match this value in order to scale.")
	addDryRunFlag(cmd, &o.dryRun)
	o.pf.AddFlags(cmd)
	return cmd
}

func (a *app) runScale(ctx context.Context, args []string, o *scaleOptions) error {
	if o.replicas < 0 {
		return fmt.Errorf("the --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0")
	}
	dry, err := parseDryRun(o.dryRun)
	if err != nil {
		return err
	}
	targets, err := parseResources(args)
	if err != nil {
		return err
	}
	if err := checkPrintFlags(o.pf); err != nil {
		return err
	}
	api, err := a.workloads()
	if err != nil {
		return err
	}
	return eachWrite(a, o.pf, dry, targets, func(t target) (runtime.Object, string, error) {
		obj, err := scaleOne(ctx, api, t, o, dry)
		return obj, "scaled", err
	})
}

// scaleOne writes the scale subresource; a precondition is checked on the scale as read and kept true by
// sending that read's resourceVersion along.
func scaleOne(ctx context.Context, api workloadAPI, t target, o *scaleOptions, dry dryRunMode) (*unstructured.Unstructured, error) {
	if !t.Kind.Scalable {
		return nil, fmt.Errorf("%s cannot be scaled: it has no scale subresource", t)
	}
	obj, err := api.Get(ctx, t.Kind.Resource, t.Name)
	if err != nil {
		return nil, err
	}
	version := o.resourceVersion
	if o.currentReplicas >= 0 {
		scale, err := api.Get(ctx, t.Kind.Resource, t.Name, "scale")
		if err == nil {
			err = checkScale(scale, o.currentReplicas)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %w", t, err)
		}
		version = scale.GetResourceVersion()
	}
	if err := unstructured.SetNestedField(obj.Object, int64(o.replicas), "spec", "replicas"); err != nil {
		return nil, fmt.Errorf("setting spec.replicas: %w", err)
	}
	if dry == dryRunClient {
		return obj, nil
	}
	e, err := scalePatch(o.replicas, version)
	if err != nil {
		return nil, err
	}
	_, err = api.Patch(ctx, t.Kind.Resource, t.Name, patchRequest{Type: e.Type, Data: e.Patch, Subresource: "scale", DryRun: dry == dryRunServer})
	return obj, err
}

type scaleDownOptions struct {
	pf   *genericclioptions.PrintFlags
	pods string
}

func newScaleDownCommand(a *app) *cobra.Command {
	o := &scaleDownOptions{pf: genericclioptions.NewPrintFlags("selective pod deletion")}
	cmd := &cobra.Command{
		Use:   "scaledown [CLONESET] --pods [POD1,POD2] -n [NAMESPACE]",
		Short: "Scaledown a cloneset with selective Pods",
		Long: `Scaledown a cloneset with selective Pods.

The pods are added to the CloneSet's spec.scaleStrategy.podsToDelete and spec.replicas is lowered by
their number, so the CloneSet deletes exactly these pods. Every pod must exist and belong to the CloneSet;
a pod already in podsToDelete is not counted twice.`,
		Example: `  # Scale down 2 with selective pods
  kubectl-kruise scaledown cloneset/cloneset-demo --pods pod-1,pod-2 -n default`,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runScaleDown(cmd.Context(), args, o)
		},
	}
	cmd.Flags().StringVar(&o.pods, "pods", "", "Name of the pods to delete")
	o.pf.AddFlags(cmd)
	return cmd
}

func (a *app) runScaleDown(ctx context.Context, args []string, o *scaleDownOptions) error {
	pods, err := parsePodNames(o.pods)
	if err != nil {
		return err
	}
	targets, err := parseResources(args)
	if err != nil {
		return err
	}
	if len(targets) != 1 || targets[0].Kind != kindCloneSet {
		return fmt.Errorf("currently only supported CloneSet selective pods deletion: give one cloneset/NAME")
	}
	if err := checkPrintFlags(o.pf); err != nil {
		return err
	}
	api, err := a.workloads()
	if err != nil {
		return err
	}
	t := targets[0]
	obj, err := scaleDownOne(ctx, api, t, pods)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.streams.Out, "# %s delete pods %v successfully\n", t.Name, pods)
	return a.printAs(o.pf, obj, "selective pod deletion", dryRunNone)
}

func scaleDownOne(ctx context.Context, api workloadAPI, t target, pods []string) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cs, err := api.Get(ctx, t.Kind.Resource, t.Name)
		if err != nil {
			return err
		}
		if err := checkPodsOwned(ctx, api, cs, pods); err != nil {
			return err
		}
		e, err := planScaleDown(cs, pods)
		if err != nil {
			return fmt.Errorf("%s %w", t, err)
		}
		out, err = api.Patch(ctx, t.Kind.Resource, t.Name, patchRequest{Type: e.Type, Data: e.Patch})
		return err
	})
	return out, err
}

// checkPodsOwned refuses pods that do not exist or that the CloneSet does not control: lowering its
// replicas for them would delete other pods of the CloneSet instead.
func checkPodsOwned(ctx context.Context, api workloadAPI, cs *unstructured.Unstructured, pods []string) error {
	var errs []error
	for _, name := range pods {
		pod, err := api.Get(ctx, podsGVR, name)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !controlledBy(pod, cs.GetUID()):
			errs = append(errs, fmt.Errorf("pod %q is not a pod of cloneset %q", name, cs.GetName()))
		}
	}
	return errors.Join(errs...)
}
