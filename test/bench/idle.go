package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

const (
	idleNamespace   = "bench-idle"
	idleDeployments = 1000
	idleReplicas    = 10
	// idleSettle lets the manager finish its start-up (informer lists,
	// certificate reconcile) before the window opens.
	idleSettle = 15 * time.Second
	idleWindow = 60 * time.Second
	// Targets of issue 7.
	idleRSSTarget = 150 << 20
	idleCPUTarget = 0.01
)

// managerIdle measures what an idle manager costs on a cluster holding
// 10,000 pods, next to kube-controller-manager idling on the same objects.
func managerIdle() Scenario {
	return Scenario{
		Name: "manager-idle",
		Description: fmt.Sprintf("RSS and CPU of an idle manager over %.0f s with %d pods of %d Deployments present, "+
			"against kube-controller-manager over the same window", idleWindow.Seconds(), idleDeployments*idleReplicas, idleDeployments),
		Cluster: cluster.Options{
			ControllerManager: true, Scheduler: true, Nodes: 100, PodsPerNode: 110,
			Args: map[string][]string{
				// The defaults (20 and 50 QPS) would make creating the pods
				// take most of the time budget.
				"kube-controller-manager": {"--kube-api-qps=300", "--kube-api-burst=600",
					"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10"},
				"kube-scheduler": {"--kube-api-qps=300", "--kube-api-burst=600"},
			},
		},
		Timeout: 15 * time.Minute,
		Run:     runManagerIdle,
	}
}

func runManagerIdle(ctx context.Context, env *Env, res *Result) error {
	ready, err := Populate(ctx, env, idleNamespace, idleDeployments, idleReplicas)
	res.Cluster.Objects = map[string]int{"deployments": idleDeployments, "pods": idleDeployments * idleReplicas}
	if err != nil {
		return err
	}
	res.Add(Metric{Name: "pods Running and Ready", Unit: UnitSeconds, Value: ready.Seconds(),
		Note: fmt.Sprintf("setup: %d pods by kube-controller-manager, kube-scheduler and kwok", idleDeployments*idleReplicas)})
	if err := startAndSettle(ctx, env, res); err != nil {
		return err
	}
	kcm, err := env.ControllerManagerProc()
	if err != nil {
		return err
	}
	env.Logf("measuring an idle window of %v", idleWindow)
	phase, err := env.Measure(ctx, []Proc{kcm}, func(ctx context.Context) error { return sleep(ctx, idleWindow) })
	res.Record(phase)
	if err != nil {
		return err
	}
	addIdleMetrics(res, phase.Usage[ManagerName], phase.Usage[ControllerManagerName])
	return nil
}

// startAndSettle starts the manager on the populated cluster and records
// its start-up: time to ready, requests and peak RSS until the window.
func startAndSettle(ctx context.Context, env *Env, res *Result) error {
	begin := time.Now()
	if err := env.StartManager(ctx); err != nil {
		return err
	}
	readyIn := time.Since(begin)
	if err := sleep(ctx, idleSettle); err != nil {
		return err
	}
	requests, err := env.ManagerRequests(ctx)
	if err != nil {
		return err
	}
	st, err := ReadProc(env.Manager.PID())
	if err != nil {
		return err
	}
	startup := DiffRequests(nil, requests)
	res.SetupRequests = startup
	res.Add(
		Metric{Name: "manager ready", Unit: UnitSeconds, Value: readyIn.Seconds(), Note: "start to /readyz"},
		Metric{Name: "manager start-up API requests", Unit: UnitCount, Value: float64(total(startup)),
			Note: fmt.Sprintf("until %v after ready", idleSettle)},
		Metric{Name: "manager peak RSS since start", Unit: UnitBytes, Value: float64(st.HWMBytes)},
	)
	return nil
}

func addIdleMetrics(res *Result, manager, kcm Usage) {
	res.Add(
		Metric{Name: "manager peak RSS (idle)", Unit: UnitBytes, Value: float64(manager.PeakRSSBytes)}.
			Compared(ControllerManagerName, float64(kcm.PeakRSSBytes)).WithTarget(idleRSSTarget),
		Metric{Name: "manager CPU (idle)", Unit: UnitCores, Value: manager.Cores}.
			Compared(ControllerManagerName, kcm.Cores).WithTarget(idleCPUTarget),
	)
}
