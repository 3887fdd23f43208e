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

// dryRunMode is kubectl's --dry-run: none, client (print what would be sent) or server.
type dryRunMode int

const (
	dryRunNone dryRunMode = iota
	dryRunClient
	dryRunServer
)

func addDryRunFlag(cmd *cobra.Command, value *string) {
	cmd.Flags().StringVar(value, "dry-run", "none", `Must be "none", "server", or "client". If client strategy, only print the object that would be sent, without sending it. If server strategy, submit server-side request without persisting the resource.`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "unchanged"
}

func parseDryRun(s string) (dryRunMode, error) {
	switch s {
	case "", "none":
		return dryRunNone, nil
	case "client":
		return dryRunClient, nil
	case "server":
		return dryRunServer, nil
	case "unchanged":
		return dryRunNone, fmt.Errorf(`--dry-run flag without a value was specified. A value must be set: "none", "server", or "client"`)
	default:
		return dryRunNone, fmt.Errorf(`invalid dry-run value (%s). Must be "none", "server", or "client"`, s)
	}
}

// printAs prints obj in the -o format, or by default as "<kind>.<group>/<name> <operation>", with the
// operation marked when nothing was persisted.
func (a *app) printAs(pf *genericclioptions.PrintFlags, obj runtime.Object, operation string, dry dryRunMode) error {
	switch dry {
	case dryRunClient:
		operation += " (dry run)"
	case dryRunServer:
		operation += " (server dry run)"
	}
	pf.NamePrintFlags.Operation = operation
	printer, err := pf.ToPrinter()
	if err != nil {
		return fmt.Errorf("output format: %w", err)
	}
	return printer.PrintObj(obj, a.streams.Out)
}

// checkPrintFlags fails early on a bad -o, before anything is changed.
func checkPrintFlags(pf *genericclioptions.PrintFlags) error {
	if _, err := pf.ToPrinter(); err != nil {
		return fmt.Errorf("output format: %w", err)
	}
	return nil
}

// planner plans the edit of one object as read.
type planner func(obj *unstructured.Unstructured) (edit, error)

// applyTo reads a target, plans its edit and writes it once: nothing for an empty edit, only the
// preview for a client dry run. Plans guarded by the resourceVersion are re-read and re-planned when the
// object changed in between. It reports whether there was anything to change.
func applyTo(ctx context.Context, api workloadAPI, t target, dry dryRunMode, plan planner) (*unstructured.Unstructured, bool, error) {
	var out *unstructured.Unstructured
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := api.Get(ctx, t.Kind.Resource, t.Name)
		if err != nil {
			return err
		}
		e, err := plan(obj)
		if err != nil {
			return fmt.Errorf("%s %w", t, err)
		}
		out, changed = obj, e.Patch != nil
		switch {
		case !changed:
			return nil
		case dry == dryRunClient:
			out = e.Preview
			return nil
		}
		out, err = api.Patch(ctx, t.Kind.Resource, t.Name, patchRequest{Type: e.Type, Data: e.Patch, DryRun: dry == dryRunServer})
		return err
	})
	return out, changed, err
}

// eachWrite runs write for every item, prints what each wrote with its verb ("" prints nothing, as for a
// write that changed nothing), and joins the errors, so that one bad target does not hide the others.
func eachWrite[T any](a *app, pf *genericclioptions.PrintFlags, dry dryRunMode, items []T,
	write func(T) (runtime.Object, string, error)) error {
	var errs []error
	for _, it := range items {
		obj, verb, err := write(it)
		if err == nil && verb != "" {
			err = a.printAs(pf, obj, verb, dry)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
