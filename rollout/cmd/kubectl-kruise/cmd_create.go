package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var (
	jobsGVR             = batchv1.SchemeGroupVersion.WithResource("jobs")
	cronJobsGVR         = batchv1.SchemeGroupVersion.WithResource("cronjobs")
	advancedCronJobsGVR = kruiseappsv1alpha1.GroupVersion.WithResource("advancedcronjobs")
	broadcastJobsGVR    = kruiseappsv1alpha1.GroupVersion.WithResource("broadcastjobs")
	crrGVR              = kruiseappsv1alpha1.GroupVersion.WithResource("containerrecreaterequests")
)

func newCreateCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "create SUBCOMMAND",
		Short:                 "Create a job, broadcastJob or ContainerRecreateRequest",
		Long:                  "Create a job or a broadcastJob, from an image or by hand from a cron job, or a ContainerRecreateRequest.",
		DisableFlagsInUseLine: true,
		Args:                  cobra.NoArgs,
		RunE:                  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCreateJobCommand(a, false), newCreateJobCommand(a, true), newCreateCRRCommand(a))
	return cmd
}

type createOptions struct {
	pf     *genericclioptions.PrintFlags
	dryRun string
}

func newCreateOptions(cmd *cobra.Command) *createOptions {
	o := &createOptions{pf: genericclioptions.NewPrintFlags("created")}
	addDryRunFlag(cmd, &o.dryRun)
	o.pf.AddFlags(cmd)
	return o
}

// builder makes the object to create, reading what it needs through api.
type builder func(ctx context.Context, api workloadAPI) (runtime.Object, error)

// runCreate builds an object and creates it once (or only prints it for --dry-run=client).
func (a *app) runCreate(ctx context.Context, o *createOptions, gvr schema.GroupVersionResource, build builder) error {
	dry, err := parseDryRun(o.dryRun)
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
	typed, err := build(ctx, api)
	if err != nil {
		return err
	}
	m, err := unstructuredOf(typed)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: m}
	obj.SetNamespace(api.Namespace())
	if dry != dryRunClient {
		if obj, err = api.Create(ctx, gvr, obj, dry == dryRunServer); err != nil {
			return err
		}
	}
	return a.printAs(o.pf, obj, "created", dry)
}

type jobOptions struct {
	*createOptions
	image, from string
}

func newCreateJobCommand(a *app, broadcast bool) *cobra.Command {
	o := &jobOptions{}
	use, what, aliases := "job NAME --image=image [--from=cronjob/name] -- [COMMAND] [args...]", "job", []string{"jobs"}
	fromHelp := "The name of the resource to create a Job from (cronjob and advancedCronjob are supported)."
	example := `  # Create a job
  kubectl-kruise create job my-job --image=busybox

  # Create a job with command
  kubectl-kruise create job my-job --image=busybox -- date

  # Create a job from a AdvancedCronJob named "a-advancedCronjob"
  kubectl-kruise create job test-job --from=acj/a-advancedCronjob`
	if broadcast {
		use, what, aliases = "broadcastJob NAME --image=image [--from=acj/name] -- [COMMAND] [args...]", "broadcastJob", []string{"broadcastjob", "bcj"}
		fromHelp = "The name of the resource to create a BroadcastJob from (only advancedCronjob is supported)."
		example = `  # Create a broadcastJob
  kubectl-kruise create broadcastJob my-bcj --image=busybox

  # Create a broadcastJob with command
  kubectl-kruise create broadcastJob my-bcj --image=busybox -- date

  # Create a broadcastJob from a AdvancedCronJob named "a-advancedCronjob"
  kubectl-kruise create broadcastJob test-bcj --from=acj/a-advancedCronjob`
	}
	cmd := &cobra.Command{
		Use:     use,
		Aliases: aliases,
		Short:   "Create a " + what + " with the specified name",
		Long: "Create a " + what + ` with the specified name, running --image, or by hand from the template of a cron job
(--from), with the template's labels and annotations, the annotation cronjob.kubernetes.io/instantiate:
manual and an owner reference to the cron job.`,
		Example:               example,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if broadcast {
				return a.runCreate(cmd.Context(), o.createOptions, broadcastJobsGVR, o.broadcastJobBuilder(args))
			}
			return a.runCreate(cmd.Context(), o.createOptions, jobsGVR, o.jobBuilder(args))
		},
	}
	o.createOptions = newCreateOptions(cmd)
	cmd.Flags().StringVar(&o.image, "image", "", "Image name to run.")
	cmd.Flags().StringVar(&o.from, "from", "", fromHelp)
	return cmd
}

// source checks the arguments: a name, then --image with an optional command or --from alone.
func (o *jobOptions) source(args []string) (string, jobSource, error) {
	if len(args) == 0 || args[0] == "" {
		return "", jobSource{}, fmt.Errorf("NAME is required")
	}
	if (o.image == "") == (o.from == "") {
		return "", jobSource{}, fmt.Errorf("either --image or --from must be specified")
	}
	if len(args) > 1 && o.from != "" {
		return "", jobSource{}, fmt.Errorf("cannot specify --from and command")
	}
	return args[0], jobSource{Image: o.image, Command: args[1:]}, nil
}

func (o *jobOptions) jobBuilder(args []string) builder {
	return func(ctx context.Context, api workloadAPI) (runtime.Object, error) {
		name, src, err := o.source(args)
		if err != nil || o.from == "" {
			return newJob(name, src), err
		}
		kind, from, err := parseCronJobRef(o.from)
		if err != nil {
			return nil, err
		}
		if kind == "CronJob" {
			var cj batchv1.CronJob
			if err := getTyped(ctx, api, cronJobsGVR, from, &cj); err != nil {
				return nil, err
			}
			return jobFromCronJob(name, &cj), nil
		}
		var acj kruiseappsv1alpha1.AdvancedCronJob
		if err := getTyped(ctx, api, advancedCronJobsGVR, from, &acj); err != nil {
			return nil, err
		}
		return jobFromAdvancedCronJob(name, &acj)
	}
}

func (o *jobOptions) broadcastJobBuilder(args []string) builder {
	return func(ctx context.Context, api workloadAPI) (runtime.Object, error) {
		name, src, err := o.source(args)
		if err != nil || o.from == "" {
			return newBroadcastJob(name, src), err
		}
		kind, from, err := parseCronJobRef(o.from)
		if err != nil || kind != kruiseappsv1alpha1.AdvancedCronJobKind {
			return nil, fmt.Errorf("from must be an existing advancedCronJob (acj/NAME)")
		}
		var acj kruiseappsv1alpha1.AdvancedCronJob
		if err := getTyped(ctx, api, advancedCronJobsGVR, from, &acj); err != nil {
			return nil, err
		}
		return broadcastJobFromAdvancedCronJob(name, &acj)
	}
}

// parseCronJobRef reads --from: cronjob/NAME or acj/NAME (and their longer spellings).
func parseCronJobRef(from string) (string, string, error) {
	typ, name, ok := strings.Cut(from, "/")
	if ok && name != "" {
		switch strings.ToLower(typ) {
		case "cronjob", "cronjobs", "cj", "cronjob.batch", "cronjobs.batch":
			return "CronJob", name, nil
		case "acj", "advancedcronjob", "advancedcronjobs", "advancedcronjob.apps.kruise.io", "advancedcronjobs.apps.kruise.io":
			return kruiseappsv1alpha1.AdvancedCronJobKind, name, nil
		}
	}
	return "", "", fmt.Errorf("--from must be cronjob/NAME or acj/NAME, got %q", from)
}

// getTyped reads an object and decodes it into out.
func getTyped(ctx context.Context, api workloadAPI, gvr schema.GroupVersionResource, name string, out any) error {
	obj, err := api.Get(ctx, gvr, name)
	if err != nil {
		return err
	}
	return fromUnstructured(obj, out)
}

type crrCommandOptions struct {
	*createOptions
	pod string
	crrOptions
}

func newCreateCRRCommand(a *app) *cobra.Command {
	o := &crrCommandOptions{crrOptions: crrOptions{UnreadyGraceSecs: defaultCRRUnreadyGraceSeconds, MinStartedSeconds: defaultCRRMinStartedSeconds}}
	cmd := &cobra.Command{
		Use:     "ContainerRecreateRequest NAME --pod=podName [--containers=container]",
		Aliases: []string{"containerrecreaterequest", "crr"},
		Short:   "Create a ContainerRecreateRequest with the specified name",
		Long: `Create a ContainerRecreateRequest with the specified name, to restart containers of a pod in place.

Defaults: failurePolicy Fail, unreadyGracePeriodSeconds 3, minStartedSeconds 3, activeDeadlineSeconds 300,
ttlSecondsAfterFinished 1800. Without --containers every container of the pod is recreated.`,
		Example: `  # Create a crr with default value to restart all containers in pod-1
  kubectl-kruise create ContainerRecreateRequest my-crr --namespace=ns --pod=pod-1

  # Create a crr with default value to restart container-1 in pod-1
  kubectl-kruise create ContainerRecreateRequest my-crr --namespace=ns --pod=pod-1 --containers=container-1`,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runCreate(cmd.Context(), o.createOptions, crrGVR, o.build(args))
		},
	}
	o.createOptions = newCreateOptions(cmd)
	cmd.Flags().StringVarP(&o.pod, "pod", "p", "", "The name of the pod).")
	cmd.Flags().StringSliceVar(&o.Containers, "containers", nil, "The containers those need to restarted.")
	cmd.Flags().Int64VarP(&o.UnreadyGraceSecs, "unreadyGracePeriodSeconds", "u", o.UnreadyGraceSecs, "UnreadyGracePeriodSeconds is the optional duration in seconds to mark Pod as not ready over this duration before executing preStop hook and stopping the container")
	cmd.Flags().Int32VarP(&o.MinStartedSeconds, "minStartedSeconds", "m", o.MinStartedSeconds, "Minimum number of seconds for which a newly created container should be started and ready without any of its container crashing, for it to be considered Succeeded.")
	return cmd
}

func (o *crrCommandOptions) build(args []string) builder {
	return func(ctx context.Context, api workloadAPI) (runtime.Object, error) {
		if len(args) != 1 || args[0] == "" {
			return nil, fmt.Errorf("exactly one NAME is required, got %d arguments", len(args))
		}
		if o.pod == "" {
			return nil, fmt.Errorf("--pod is required")
		}
		var pod corev1.Pod
		if err := getTyped(ctx, api, podsGVR, o.pod, &pod); err != nil {
			return nil, err
		}
		return newContainerRecreateRequest(args[0], &pod, o.crrOptions)
	}
}
