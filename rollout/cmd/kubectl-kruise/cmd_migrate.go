package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

type migrateOptions struct {
	from, srcName, dstName string
	create, copyReplicas   bool
	replicas, maxSurge     int32
	timeoutSeconds         int32
}

func newMigrateCommand(a *app) *cobra.Command {
	o := &migrateOptions{replicas: -1, maxSurge: 1}
	cmd := &cobra.Command{
		Use:   "migrate CloneSet --from Deployment --src-name NAME --dst-name NAME [flags]",
		Short: "Migrate from K8s original workloads to Kruise workloads",
		Long: `Migrate from K8s original workloads to Kruise workloads.

With --create, a CloneSet is made from the Deployment: the same labels, annotations, finalizers, selector,
pod template, minReadySeconds and revisionHistoryLimit; updateStrategy ReCreate and paused, with the
Deployment's maxUnavailable and maxSurge; 0 replicas, or the Deployment's with --copy (which only copies).
Then replicas move over in turns: the CloneSet's spec.replicas grows by at most --max-surge, and once all
of its replicas are available the Deployment shrinks by as many. --replicas bounds how many move (all by
default); --timeout-seconds bounds the whole migration.`,
		Example: `  # Create an empty CloneSet from an existing Deployment.
  kubectl-kruise migrate CloneSet --from Deployment --src-name deploy-demo --dst-name cs-demo --create

  # Create a same replicas CloneSet from an existing Deployment.
  kubectl-kruise migrate CloneSet --from Deployment --src-name deploy-demo --dst-name cs-demo --create --copy

  # Migrate replicas from an existing Deployment to an existing CloneSet.
  kubectl-kruise migrate CloneSet --from Deployment --src-name deploy-demo --dst-name cs-demo --replicas 10 --max-surge=2`,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(args); err != nil {
				return err
			}
			return a.runMigrate(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "Type of the source workload (e.g. Deployment).")
	f.StringVar(&o.srcName, "src-name", "", "Name of the source workload.")
	f.StringVar(&o.dstName, "dst-name", "", "Name of the destination workload.")
	f.BoolVar(&o.create, "create", false, "Create dst workload with replicas=0 from src workload.")
	f.BoolVar(&o.copyReplicas, "copy", false, "Copy replicas from src workload when create.")
	f.Int32Var(&o.replicas, "replicas", o.replicas, "The number of replicas to migrate, -1 (default) means all.")
	f.Int32Var(&o.maxSurge, "max-surge", o.maxSurge, "Max surge during migration.")
	f.Int32Var(&o.timeoutSeconds, "timeout-seconds", 0, "Timeout seconds for migration, zero means never.")
	return cmd
}

func (o *migrateOptions) validate(args []string) error {
	switch {
	case len(args) != 1:
		return fmt.Errorf("migrate takes one destination type, CloneSet")
	case !isKind(args[0], kindCloneSet):
		return fmt.Errorf("cannot migrate to %s: only CloneSet is supported", args[0])
	case !isKind(o.from, kindDeployment):
		return fmt.Errorf("cannot migrate from %q: --from must be Deployment", o.from)
	case o.srcName == "" || o.dstName == "":
		return fmt.Errorf("--src-name and --dst-name are required")
	case o.maxSurge < 1:
		return fmt.Errorf("--max-surge must be 1 or more, got %d", o.maxSurge)
	case o.copyReplicas && !o.create:
		return fmt.Errorf("--copy needs --create")
	}
	return nil
}

func (a *app) runMigrate(ctx context.Context, o *migrateOptions) error {
	api, err := a.workloads()
	if err != nil {
		return err
	}
	if o.create {
		if err := a.createCloneSet(ctx, api, o); err != nil || o.copyReplicas {
			return err
		}
	}
	if o.timeoutSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(o.timeoutSeconds)*time.Second)
		defer cancel()
	}
	return a.migrateReplicas(ctx, api, o)
}

func (a *app) createCloneSet(ctx context.Context, api workloadAPI, o *migrateOptions) error {
	var d appsv1.Deployment
	if err := getTyped(ctx, api, kindDeployment.Resource, o.srcName, &d); err != nil {
		return err
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cloneSetFromDeployment(&d, o.dstName, o.copyReplicas))
	if err != nil {
		return fmt.Errorf("encoding the CloneSet: %w", err)
	}
	if _, err := api.Create(ctx, kindCloneSet.Resource, &unstructured.Unstructured{Object: raw}, false); err != nil {
		return err
	}
	fmt.Fprintf(a.streams.Out, "cloneset.apps.kruise.io/%s created from deployment.apps/%s\n", o.dstName, o.srcName)
	return nil
}

// migrateReplicas moves replicas until the goal is reached, writing one step per look.
func (a *app) migrateReplicas(ctx context.Context, api workloadAPI, o *migrateOptions) error {
	var m *migration
	err := a.poll(ctx, true, func(ctx context.Context) (bool, error) {
		now, err := readMigration(ctx, api, o, m)
		if err != nil {
			return false, err
		}
		m = &now
		return a.applyMigrationStep(ctx, api, o, nextMigrationStep(now))
	})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return withCode(exitNotDone, fmt.Errorf("timed out migrating replicas from deployment.apps/%s to cloneset.apps.kruise.io/%s", o.srcName, o.dstName))
	case err != nil:
		return err
	}
	fmt.Fprintf(a.streams.Out, "migrated %d replicas from deployment.apps/%s to cloneset.apps.kruise.io/%s\n", m.Goal, o.srcName, o.dstName)
	return nil
}

// readMigration reads both workloads; the first read fixes the starting counts and the goal.
func readMigration(ctx context.Context, api workloadAPI, o *migrateOptions, prev *migration) (migration, error) {
	var d appsv1.Deployment
	var cs kruiseappsv1alpha1.CloneSet
	if err := getTyped(ctx, api, kindDeployment.Resource, o.srcName, &d); err != nil {
		return migration{}, err
	}
	if err := getTyped(ctx, api, kindCloneSet.Resource, o.dstName, &cs); err != nil {
		return migration{}, err
	}
	m := migration{
		MaxSurge: o.maxSurge, CloneSetReplicas: replicasOf(cs.Spec.Replicas), DeploymentReplicas: replicasOf(d.Spec.Replicas),
		CloneSetAvailable: cs.Status.AvailableReplicas,
	}
	if cs.Generation > cs.Status.ObservedGeneration {
		m.CloneSetAvailable = 0 // counts of an older spec say nothing about the replicas just asked for
	}
	if prev != nil {
		m.Goal, m.CloneSetStart, m.DeploymentStart = prev.Goal, prev.CloneSetStart, prev.DeploymentStart
		return m, nil
	}
	m.CloneSetStart, m.DeploymentStart, m.Goal = m.CloneSetReplicas, m.DeploymentReplicas, m.DeploymentReplicas
	if o.replicas >= 0 {
		m.Goal = min(o.replicas, m.DeploymentReplicas)
	}
	return m, nil
}

// applyMigrationStep writes one step's replicas; it reports whether the migration is over.
func (a *app) applyMigrationStep(ctx context.Context, api workloadAPI, o *migrateOptions, step migrationStep) (bool, error) {
	var k *workloadKind
	var name string
	switch step.Action {
	case migrateDone:
		return true, nil
	case migrateWait:
		return false, nil
	case migrateScaleCloneSet:
		k, name = kindCloneSet, o.dstName
	default:
		k, name = kindDeployment, o.srcName
	}
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, step.Replicas)
	if _, err := api.Patch(ctx, k.Resource, name, patchRequest{Type: types.MergePatchType, Data: patch}); err != nil {
		return false, err
	}
	fmt.Fprintf(a.streams.Out, "%s/%s scaled to %d\n", k.GroupResource(), name, step.Replicas)
	return false, nil
}

func isKind(typ string, k *workloadKind) bool {
	got, ok := kindFor(typ)
	return ok && got == k
}
