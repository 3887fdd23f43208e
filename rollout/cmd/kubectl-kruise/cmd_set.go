package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

func newSetCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set SUBCOMMAND",
		Short: "Set specific features on objects",
		Long: `Configure application resources.

These commands help you make changes to the pod template of deployments, statefulsets, daemonsets,
clonesets, Advanced StatefulSets (statefulsets.apps.kruise.io, asts) and Advanced DaemonSets
(daemonsets.apps.kruise.io, ads).`,
		DisableFlagsInUseLine: true,
		Args:                  cobra.NoArgs,
		RunE:                  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSetImageCommand(a), newSetEnvCommand(a), newSetResourcesCommand(a))
	return cmd
}

// templateTargets parses the resources of a set command: workloads with a pod template only.
func templateTargets(args []string) ([]target, error) {
	targets, err := parseResources(args)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		if t.Kind == kindRollout {
			return nil, fmt.Errorf("%s has no pod template: set the workload it references instead", t)
		}
	}
	return targets, nil
}

type setOptions struct {
	pf     *genericclioptions.PrintFlags
	dryRun string
}

func (o *setOptions) addFlags(cmd *cobra.Command) {
	addDryRunFlag(cmd, &o.dryRun)
	o.pf.AddFlags(cmd)
}

// run applies plan to the targets parsed from resources.
func (a *app) runSet(ctx context.Context, resources []string, o *setOptions, done string, plan func(*unstructured.Unstructured) (edit, error)) error {
	dry, err := parseDryRun(o.dryRun)
	if err != nil {
		return err
	}
	targets, err := templateTargets(resources)
	if err != nil {
		return err
	}
	return a.editTargets(ctx, targets, o.pf, dry, done, func(target) planner { return plan })
}

func newSetImageCommand(a *app) *cobra.Command {
	o := &setOptions{pf: genericclioptions.NewPrintFlags("image updated")}
	cmd := &cobra.Command{
		Use:   "image (TYPE NAME | TYPE/NAME) CONTAINER_NAME_1=CONTAINER_IMAGE_1 ... CONTAINER_NAME_N=CONTAINER_IMAGE_N",
		Short: "Update the image of a pod template",
		Long: `Update existing container image(s) of resources.

Possible resources include (case insensitive):

  deployment (deploy), statefulset (sts), daemonset (ds), cloneset (clone, cs),
  statefulset.apps.kruise.io (asts), daemonset.apps.kruise.io (ads)

A container name of "*" updates every container, init containers included.`,
		Example: `  # Set a CloneSet's nginx container image to 'nginx:1.9.1', and its busybox container image to 'busybox'
  kubectl-kruise set image cloneset/sample busybox=busybox nginx=nginx:1.9.1

  # Update the image of all containers of an Advanced StatefulSet
  kubectl-kruise set image asts/sample *=nginx:1.9.1`,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			resources, pairs, err := splitPairs(args, func(s string) bool { return strings.Contains(s, "=") }, "image")
			if err != nil {
				return err
			}
			images, err := parseImages(pairs)
			if err != nil {
				return err
			}
			return a.runSet(cmd.Context(), resources, o, "image updated", func(obj *unstructured.Unstructured) (edit, error) {
				return planSetImage(obj, images)
			})
		},
	}
	o.addFlags(cmd)
	return cmd
}

type envOptions struct {
	setOptions
	containers, from, prefix string
	env, keys                []string
	overwrite, list          bool
}

func newSetEnvCommand(a *app) *cobra.Command {
	o := &envOptions{setOptions: setOptions{pf: genericclioptions.NewPrintFlags("env updated")}, overwrite: true}
	cmd := &cobra.Command{
		Use:   "env RESOURCE/NAME KEY_1=VAL_1 ... KEY_N=VAL_N",
		Short: "Update environment variables on a pod template",
		Long: `Update environment variables on a pod template.

List environment variable definitions in one or more pods, pod templates. Add, update, or remove container
environment variable definitions in one or more pod templates (within deployments, statefulsets,
daemonsets, clonesets, Advanced StatefulSets and Advanced DaemonSets).

KEY=VALUE sets a variable, KEY- removes it. With --from, the keys of a Secret or ConfigMap are referenced:
all of them through envFrom, or with --keys each one as a variable named after the key.`,
		Example: `  # Update CloneSet 'sample' with a new environment variable
  kubectl-kruise set env cloneset/sample STORAGE_DIR=/local

  # List the environment variables defined on a CloneSet 'sample'
  kubectl-kruise set env cloneset/sample --list

  # Import environment from a secret
  kubectl-kruise set env --from=secret/mysecret cloneset/sample

  # Remove the environment variable ENV from container 'c1' of an Advanced StatefulSet
  kubectl-kruise set env asts/sample --containers=c1 ENV-`,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runSetEnv(cmd.Context(), args, o)
		},
	}
	cmd.Flags().StringVarP(&o.containers, "containers", "c", "*", "The names of containers in the selected pod templates to change - may use wildcards")
	cmd.Flags().StringArrayVarP(&o.env, "env", "e", nil, "Specify a key-value pair for an environment variable to set into each container.")
	cmd.Flags().StringVar(&o.from, "from", "", "The name of a resource from which to inject environment variables (secret/NAME or configmap/NAME)")
	cmd.Flags().StringVar(&o.prefix, "prefix", "", "Prefix to append to variable names")
	cmd.Flags().StringSliceVar(&o.keys, "keys", nil, "Comma-separated list of keys to import from specified resource")
	cmd.Flags().BoolVar(&o.overwrite, "overwrite", true, "If true, allow environment to be overwritten, otherwise reject updates that overwrite existing environment.")
	cmd.Flags().BoolVar(&o.list, "list", false, "If true, display the environment and any changes in the standard format. this flag will removed when we have kubectl view env.")
	o.addFlags(cmd)
	return cmd
}

func (a *app) runSetEnv(ctx context.Context, args []string, o *envOptions) error {
	resources, pairs, err := splitPairs(args, isEnvChange, "environment")
	if err != nil {
		return err
	}
	if o.list {
		return a.listEnv(ctx, resources, o.containers)
	}
	ch, err := a.envChangeOf(ctx, append(append([]string{}, o.env...), pairs...), o)
	if err != nil {
		return err
	}
	if len(ch.Set) == 0 && len(ch.Remove) == 0 && len(ch.EnvFrom) == 0 {
		return fmt.Errorf("at least one environment variable must be provided")
	}
	return a.runSet(ctx, resources, &o.setOptions, "env updated", func(obj *unstructured.Unstructured) (edit, error) {
		return planSetEnv(obj, ch)
	})
}

func (a *app) envChangeOf(ctx context.Context, pairs []string, o *envOptions) (envChange, error) {
	set, remove, err := parseEnv(pairs)
	if err != nil {
		return envChange{}, err
	}
	ch := envChange{Containers: o.containers, Set: set, Remove: remove, Overwrite: o.overwrite}
	if o.from == "" {
		return ch, nil
	}
	fromEnv, envFrom, err := a.envFrom(ctx, o.from, o.prefix, o.keys)
	ch.Set, ch.EnvFrom = append(ch.Set, fromEnv...), envFrom
	return ch, err
}

// envFrom reads the keys of the Secret or ConfigMap of --from.
func (a *app) envFrom(ctx context.Context, from, prefix string, only []string) ([]corev1.EnvVar, []corev1.EnvFromSource, error) {
	typ, name, ok := strings.Cut(from, "/")
	kind, gvr := "ConfigMap", configMapsGVR
	switch strings.ToLower(typ) {
	case "secret", "secrets":
		kind, gvr = "Secret", secretsGVR
	case "configmap", "configmaps", "cm":
	default:
		ok = false
	}
	if !ok || name == "" {
		return nil, nil, fmt.Errorf("--from must be secret/NAME or configmap/NAME, got %q", from)
	}
	api, err := a.workloads()
	if err != nil {
		return nil, nil, err
	}
	obj, err := api.Get(ctx, gvr, name)
	if err != nil {
		return nil, nil, err
	}
	keys := dataKeys(obj)
	env, envFrom := envFromKeys(kind, name, prefix, keys, only)
	return env, envFrom, nil
}

func dataKeys(obj *unstructured.Unstructured) []string {
	var keys []string
	for _, field := range []string{"data", "binaryData", "stringData"} {
		m, _, _ := unstructured.NestedMap(obj.Object, field)
		keys = append(keys, sortedKeys(m)...)
	}
	return keys
}

// listEnv prints the environment of the selected containers, as `kubectl set env --list` does.
func (a *app) listEnv(ctx context.Context, resources []string, containers string) error {
	targets, err := templateTargets(resources)
	if err != nil {
		return err
	}
	api, err := a.workloads()
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range targets {
		obj, err := api.Get(ctx, t.Kind.Resource, t.Name)
		if err == nil {
			err = a.printEnv(t, obj, containers)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (a *app) printEnv(t target, obj *unstructured.Unstructured, pattern string) error {
	tmpl, err := podTemplate(obj)
	if err != nil {
		return err
	}
	for _, c := range append(tmpl.Spec.InitContainers, tmpl.Spec.Containers...) {
		if ok, _ := pathMatch(pattern, c.Name); !ok {
			continue
		}
		fmt.Fprintf(a.streams.Out, "# %s %s, container %s\n", t.Kind.Resource.Resource, t.Name, c.Name)
		for _, line := range envText(c.Env, c.EnvFrom) {
			fmt.Fprintln(a.streams.Out, line)
		}
	}
	return nil
}

type resourcesOptions struct {
	setOptions
	containers, limits, requests string
}

func newSetResourcesCommand(a *app) *cobra.Command {
	o := &resourcesOptions{setOptions: setOptions{pf: genericclioptions.NewPrintFlags("resource requirements updated")}}
	cmd := &cobra.Command{
		Use:   "resources (TYPE NAME | TYPE/NAME) ([--limits=LIMITS & --requests=REQUESTS]",
		Short: "Update resource requests/limits on objects with pod templates",
		Long: `Specify compute resource requirements (CPU, memory) for any resource that defines a pod template.

For each compute resource, if a limit is specified and a request is omitted, the request will default to
the limit. Possible resources include (case insensitive): deployment (deploy), statefulset (sts),
daemonset (ds), cloneset (clone, cs), statefulset.apps.kruise.io (asts), daemonset.apps.kruise.io (ads).`,
		Example: `  # Set the nginx container's cpu limit to "200m" and memory to "512Mi" in CloneSet 'sample'
  kubectl-kruise set resources cloneset/sample -c=nginx --limits=cpu=200m,memory=512Mi

  # Set the requests and limits of all containers of an Advanced StatefulSet
  kubectl-kruise set resources asts/sample --limits=cpu=200m,memory=512Mi --requests=cpu=100m,memory=256Mi`,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			ch, err := o.change()
			if err != nil {
				return err
			}
			return a.runSet(cmd.Context(), args, &o.setOptions, "resource requirements updated", func(obj *unstructured.Unstructured) (edit, error) {
				return planSetResources(obj, ch)
			})
		},
	}
	cmd.Flags().StringVarP(&o.containers, "containers", "c", "*", "The names of containers in the selected resource templates to change, all containers are selected by default - may use wildcards")
	cmd.Flags().StringVar(&o.limits, "limits", "", "The resource requirement limits for this container.  For example, 'cpu=200m,memory=512Mi'.")
	cmd.Flags().StringVar(&o.requests, "requests", "", "The resource requirement requests for this container.  For example, 'cpu=100m,memory=256Mi'.")
	o.addFlags(cmd)
	return cmd
}

func (o *resourcesOptions) change() (resourceChange, error) {
	if o.limits == "" && o.requests == "" {
		return resourceChange{}, fmt.Errorf("you must specify an update to requests or limits (in the form of --requests/--limits)")
	}
	limits, err := parseResourceList(o.limits)
	if err != nil {
		return resourceChange{}, err
	}
	requests, err := parseResourceList(o.requests)
	return resourceChange{Containers: o.containers, Limits: limits, Requests: requests}, err
}
