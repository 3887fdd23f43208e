package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func newDescribeCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "describe SUBCOMMAND",
		Short:                 "Show details of a specific resource or group of resources",
		Long:                  "Show details of a specific resource.",
		DisableFlagsInUseLine: true,
		Args:                  cobra.NoArgs,
		RunE:                  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newDescribeRolloutCommand(a))
	return cmd
}

type describeOptions struct {
	watch, noColor, all bool
	timeoutSeconds      int
}

func newDescribeRolloutCommand(a *app) *cobra.Command {
	o := &describeOptions{}
	cmd := &cobra.Command{
		Use:     "rollout NAME",
		Aliases: []string{"rollouts", "ro"},
		Short:   "Get details about a rollout",
		Long: `Get details about and visual representation of a rollout.

Shows the Rollout's phase, its strategy with every step (the current one with its state), the traffic
routing, the workload it releases (images, revisions, replica counts), the conditions, and the pods of
the current batch (all pods of the release with --all).`,
		Example: `  # Describe the rollout named rollout-demo within namespace default
  kubectl-kruise describe rollout rollout-demo -n default

  # Watch for changes to the rollout named rollout-demo
  kubectl-kruise describe rollout rollout-demo -n default -w`,
		DisableFlagsInUseLine: true,
		ValidArgsFunction:     a.completeRollouts,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runDescribe(cmd.Context(), args, o)
		},
	}
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "Watch for changes to the rollout")
	cmd.Flags().BoolVar(&o.noColor, "no-color", false, "If true, print output without color")
	cmd.Flags().IntVar(&o.timeoutSeconds, "timeout", 0, "Timeout after specified seconds")
	cmd.Flags().BoolVar(&o.all, "all", false, "Show all pods in the rollout")
	return cmd
}

func (a *app) runDescribe(ctx context.Context, args []string, o *describeOptions) error {
	if len(args) != 1 {
		return fmt.Errorf("describe rollout takes one Rollout name, got %d arguments", len(args))
	}
	name := args[0]
	if typ, n, ok := strings.Cut(name, "/"); ok {
		if k, known := kindFor(typ); !known || k != kindRollout {
			return fmt.Errorf("describe rollout describes Rollouts, not %q", typ)
		}
		name = n
	}
	ctx, cancel := withTimeout(ctx, time.Duration(o.timeoutSeconds)*time.Second)
	defer cancel()
	view := newLiveView(a.streams.Out)
	err := a.poll(ctx, o.watch, func(ctx context.Context) (bool, error) {
		v, err := a.describeView(ctx, name, o.all)
		if err != nil {
			return false, err
		}
		v.Color = view.tty && !o.noColor
		text := renderDescribe(v)
		view.Show(text, text)
		return !o.watch, nil
	})
	if o.watch && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return nil
	}
	return err
}

// describeView reads the Rollout, its workload and the pods to show. Only the Rollout is required: the
// rest adds detail and its errors are shown in place.
func (a *app) describeView(ctx context.Context, name string, all bool) (rolloutView, error) {
	api, err := a.api()
	if err != nil {
		return rolloutView{}, err
	}
	ro, err := api.GetRollout(ctx, name)
	if err != nil {
		return rolloutView{}, err
	}
	v := rolloutView{Rollout: ro, Now: a.clock.Now()}
	wapi, err := a.workloads()
	if err == nil {
		err = a.readWorkload(ctx, wapi, &v, all)
	}
	if err != nil {
		v.Workload, v.WorkloadErr = nil, err.Error()
	}
	return v, nil
}

func (a *app) readWorkload(ctx context.Context, api workloadAPI, v *rolloutView, all bool) error {
	k, err := kindForRef(v.Rollout.Spec.WorkloadRef)
	if err != nil {
		return err
	}
	w, err := api.Get(ctx, k.Resource, v.Rollout.Spec.WorkloadRef.Name)
	if err != nil {
		return err
	}
	v.Workload = w
	selector, err := selectorOf(w)
	if err != nil {
		return err
	}
	items, err := api.List(ctx, podsGVR, podSelector(k, v.Rollout, selector, all))
	if err != nil {
		return err
	}
	v.Pods, err = decodePods(items)
	return err
}

// podSelector narrows the workload's pods to the release's revision and, unless all, the current batch.
func podSelector(k *workloadKind, ro *rolloutsv1beta1.Rollout, workload string, all bool) string {
	parts := []string{workload}
	sub := ro.Status.GetSubStatus()
	if sub == nil {
		return workload
	}
	hashLabel := rolloutsv1beta1.ControllerRevisionHashLabelKey
	if k == kindDeployment {
		hashLabel = rolloutsv1beta1.PodTemplateHashLabelKey
	}
	if sub.PodTemplateHash != "" && !all {
		parts = append(parts, hashLabel+"="+sub.PodTemplateHash)
	}
	if sub.CurrentStepIndex > 0 && !all && sub.CurrentStepState != rolloutsv1beta1.CanaryStepStateCompleted {
		parts = append(parts, fmt.Sprintf("%s=%d", rolloutsv1beta1.RolloutBatchIDLabel, sub.CurrentStepIndex))
	}
	return strings.Join(parts, ",")
}

func decodePods(items []unstructured.Unstructured) ([]corev1.Pod, error) {
	pods := make([]corev1.Pod, len(items))
	for i := range items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(items[i].Object, &pods[i]); err != nil {
			return nil, fmt.Errorf("decoding pod %s: %w", items[i].GetName(), err)
		}
	}
	sort.SliceStable(pods, func(i, j int) bool {
		bi, bj := pods[i].Labels[rolloutsv1beta1.RolloutBatchIDLabel], pods[j].Labels[rolloutsv1beta1.RolloutBatchIDLabel]
		if bi != bj {
			return bi < bj
		}
		return pods[i].Name < pods[j].Name
	})
	return pods, nil
}
