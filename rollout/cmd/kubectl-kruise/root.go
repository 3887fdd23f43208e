package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"
)

// deps are what the commands need from outside; tests replace them.
type deps struct {
	newAPI func(*genericclioptions.ConfigFlags) (rolloutAPI, error)
	// newWorkloadAPI connects the workload commands; nil when a test only runs Rollout commands.
	newWorkloadAPI func(*genericclioptions.ConfigFlags) (workloadAPI, error)
	clock          clock.Clock
	// interval is how often a watch looks at the Rollout again.
	interval time.Duration
}

func defaultDeps() deps {
	return deps{
		newAPI:         func(f *genericclioptions.ConfigFlags) (rolloutAPI, error) { return dynamicAPIFor(f) },
		newWorkloadAPI: func(f *genericclioptions.ConfigFlags) (workloadAPI, error) { return dynamicAPIFor(f) },
		clock:          clock.RealClock{},
		interval:       time.Second,
	}
}

// app is one invocation: its streams, the kubectl connection flags and the dependencies.
type app struct {
	deps
	streams genericiooptions.IOStreams
	flags   *genericclioptions.ConfigFlags
	// workloadClient is connected once, on first use.
	workloadClient workloadAPI
}

func (a *app) api() (rolloutAPI, error) { return a.newAPI(a.flags) }

// workloads connects the workload commands.
func (a *app) workloads() (workloadAPI, error) {
	if a.workloadClient != nil {
		return a.workloadClient, nil
	}
	if a.newWorkloadAPI == nil {
		return nil, fmt.Errorf("no client for workloads")
	}
	api, err := a.newWorkloadAPI(a.flags)
	a.workloadClient = api
	return api, err
}

// dynamicAPIFor connects the way kubectl does: --kubeconfig, --context, -n and the rest.
func dynamicAPIFor(flags *genericclioptions.ConfigFlags) (*dynamicAPI, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the client configuration: %w", err)
	}
	cfg.UserAgent = "kubectl-kruise/" + versionInfo().Version
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the namespace: %w", err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the client: %w", err)
	}
	mapper, err := flags.ToRESTMapper()
	if err != nil {
		return nil, fmt.Errorf("creating the REST mapper: %w", err)
	}
	return &dynamicAPI{client: client, mapper: mapper, namespace: ns}, nil
}

func newRootCommand(streams genericiooptions.IOStreams, d deps) *cobra.Command {
	a := &app{deps: d, streams: streams, flags: genericclioptions.NewConfigFlags(true)}
	root := &cobra.Command{
		Use:   "kubectl-kruise",
		Short: "kubectl-kruise controls Rollouts and Kruise workloads from the command line",
		Long: `kubectl-kruise controls Rollouts (rollouts.kruise.io) and workloads (CloneSets, Advanced StatefulSets and
DaemonSets, and the native Deployments, StatefulSets and DaemonSets) from the command line.

Run it as "kubectl-kruise" or, on the PATH, as the kubectl plugin "kubectl kruise".`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	a.flags.AddFlags(root.PersistentFlags())
	root.AddCommand(newRolloutCommand(a), newSetCommand(a), newScaleCommand(a), newScaleDownCommand(a), newMigrateCommand(a), newDescribeCommand(a),
		newCreateCommand(a), newExecCommand(a),
		newVersionCommand(a), newOptionsCommand(a))
	// Added now rather than at Execute, so they get the same usage template as the rest.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	setUsage(root)
	return root
}

// setUsage keeps subcommand help short like kubectl's: the connection flags are listed once, by "options".
func setUsage(root *cobra.Command) {
	for _, c := range root.Commands() {
		setUsageTree(c)
	}
}

func setUsageTree(c *cobra.Command) {
	c.SetUsageTemplate(subcommandUsage)
	for _, sub := range c.Commands() {
		setUsageTree(sub)
	}
}

const subcommandUsage = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}

{{if .HasAvailableSubCommands}}Use "{{.CommandPath}} [command] --help" for more information about a command.
{{end}}Use "kubectl-kruise options" for a list of global command-line options (applies to all commands).
`

func newOptionsCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "options",
		Short: "Print the list of flags inherited by all commands",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(a.streams.Out, "The following options can be passed to any command:\n\n%s",
				cmd.Root().PersistentFlags().FlagUsages())
			return err
		},
	}
}

// completeRollouts offers rollout/NAME for the Rollouts of the namespace the flags select.
func (a *app) completeRollouts(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	api, err := a.api()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	names, err := api.ListRolloutNames(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, "rollout/"+n)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
