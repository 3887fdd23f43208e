package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/cluster"
)

const (
	fleetNamespace = "bench-fleet"
	fleetReplicas  = 10
	// fleetIdleCPUTarget and fleetIdleWritesTarget are the fleet at rest's bounds (issue 30).
	fleetIdleCPUTarget    = 0.01
	fleetIdleWritesTarget = 0
)

// fleetSize is the number of applications of the fleet scenarios: 1,000, or FLOTILLA_BENCH_FLEET_SIZE. A small
// fleet (20) counts the writes and hand-offs of one release in a minute, with the audit log
// (FLOTILLA_BENCH_AUDIT) telling them apart; the scenarios' targets are for the 1,000.
var fleetSize = fleetSizeFromEnv()

func fleetSizeFromEnv() int {
	v := os.Getenv("FLOTILLA_BENCH_FLEET_SIZE")
	if v == "" {
		return 1000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 2 {
		fmt.Fprintf(os.Stderr, "FLOTILLA_BENCH_FLEET_SIZE=%q: want a whole number of at least 2; running 1,000\n", v)
		return 1000
	}
	return n
}

// fleetIdle measures a manager holding a fleet of Rollouts at rest: what it costs to keep 1,000 released
// Rollouts (half of them routing traffic through an nginx Ingress) in hand when nothing changes.
func fleetIdle() Scenario {
	return Scenario{
		Name: "fleet-idle",
		Description: fmt.Sprintf("RSS, CPU and API writes of the manager over %.0f s with %d Deployments of %d replicas, "+
			"each with its own Rollout at rest (half with an nginx Ingress canary), against kube-controller-manager",
			idleWindow.Seconds(), fleetSize, fleetReplicas),
		Cluster: cluster.Options{ControllerManager: true, Scheduler: true, Nodes: 100, PodsPerNode: 110,
			Args: managerIdle().Cluster.Args},
		Timeout: 20 * time.Minute,
		Scale:   true,
		Run:     runFleetIdle,
	}
}

func runFleetIdle(ctx context.Context, env *Env, res *Result) error {
	res.Cluster.Objects = map[string]int{"deployments": fleetSize, "pods": fleetSize * fleetReplicas,
		"rollouts": fleetSize, "services": fleetSize / 2, "ingresses": fleetSize / 2}
	if err := setUpFleet(ctx, env, res); err != nil {
		return err
	}
	if err := sleep(ctx, idleSettle); err != nil {
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
	manager, kcmUsage := phase.Usage[ManagerName], phase.Usage[ControllerManagerName]
	res.Add(
		Metric{Name: "manager API writes at rest", Unit: UnitCount, Value: float64(writes(phase.Requests)),
			Note: fmt.Sprintf("%d Rollouts at rest for %.0f s", fleetSize, idleWindow.Seconds())}.WithTarget(fleetIdleWritesTarget),
		Metric{Name: "manager CPU (fleet at rest)", Unit: UnitCores, Value: manager.Cores}.
			Compared(ControllerManagerName, kcmUsage.Cores).WithTarget(fleetIdleCPUTarget),
		Metric{Name: "manager peak RSS (fleet at rest)", Unit: UnitBytes, Value: float64(manager.PeakRSSBytes)}.
			Compared(ControllerManagerName, float64(kcmUsage.PeakRSSBytes)),
	)
	return nil
}

// setUpFleet creates the fleet (populateFleet) and gives its Deployments their Rollouts (setUpFleetRollouts).
func setUpFleet(ctx context.Context, env *Env, res *Result) error {
	if err := populateFleet(ctx, env, res); err != nil {
		return err
	}
	return setUpFleetRollouts(ctx, env, res)
}

// populateFleet creates the fleet's Deployments, waits for their pods, and gives every other application a
// Service and an nginx Ingress.
func populateFleet(ctx context.Context, env *Env, res *Result) error {
	ready, err := Populate(ctx, env, fleetNamespace, fleetSize, fleetReplicas)
	if err != nil {
		return err
	}
	res.Add(Metric{Name: "pods Running and Ready", Unit: UnitSeconds, Value: ready.Seconds(),
		Note: fmt.Sprintf("setup: %d pods of %d Deployments", fleetSize*fleetReplicas, fleetSize)})
	return createFleetNetworks(ctx, env)
}

// fleetRouted: every other application routes its canary traffic through an nginx Ingress.
func fleetRouted(i int) bool { return i%2 == 0 }

func fleetApp(i int) string { return fmt.Sprintf("app-%04d", i) }

func createFleetNetworks(ctx context.Context, env *Env) error {
	env.Logf("creating %d Services and nginx Ingresses", fleetSize/2)
	return forFleet(ctx, createWorkers, func(ctx context.Context, i int) error {
		if !fleetRouted(i) {
			return nil
		}
		app := fleetApp(i)
		labels := map[string]string{BenchLabel: fleetNamespace}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: fleetNamespace, Labels: labels},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": app},
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		}
		if _, err := env.Kube.CoreV1().Services(fleetNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Service %s: %w", app, err)
		}
		if _, err := env.Kube.NetworkingV1().Ingresses(fleetNamespace).Create(ctx, fleetIngress(app, labels), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Ingress %s: %w", app, err)
		}
		return nil
	})
}

func fleetIngress(app string, labels map[string]string) *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
		Name: app, Port: networkingv1.ServiceBackendPort{Number: 80}}}
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: fleetNamespace, Labels: labels},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("nginx"),
			Rules: []networkingv1.IngressRule{{Host: app + ".example", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
					{Path: "/", PathType: &prefix, Backend: backend}}}}}},
		},
	}
}

// fleetRollout is application i's partition-style Rollout: two steps with pause 0, the first with 20% of
// the replicas and of the traffic (through the Ingress) for the routed half, 50% of the replicas for the
// others.
func fleetRollout(i int) *unstructured.Unstructured {
	app := fleetApp(i)
	first := map[string]any{"replicas": "50%", "pause": map[string]any{"duration": int64(0)}}
	canary := map[string]any{"steps": []any{first,
		map[string]any{"replicas": "100%", "pause": map[string]any{"duration": int64(0)}}}}
	if fleetRouted(i) {
		first["replicas"], first["traffic"] = "20%", "20%"
		canary["trafficRoutings"] = []any{map[string]any{"service": app, "gracePeriodSeconds": int64(0),
			"ingress": map[string]any{"classType": "nginx", "name": app}}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rolloutsv1beta1.GroupVersion.String(), "kind": "Rollout",
		"metadata": map[string]any{"name": app, "namespace": fleetNamespace, "labels": map[string]any{BenchLabel: fleetNamespace}},
		"spec": map[string]any{
			"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": app},
			"strategy":    map[string]any{"canary": canary},
		},
	}}
}

func createFleetRollouts(ctx context.Context, dyn dynamic.Interface) error {
	return forFleet(ctx, createWorkers, func(ctx context.Context, i int) error {
		if _, err := dyn.Resource(rolloutsResource).Namespace(fleetNamespace).Create(ctx, fleetRollout(i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Rollout %s: %w", fleetApp(i), err)
		}
		return nil
	})
}

// waitFleetHealthy lists the Rollouts until every one is Healthy at its generation.
func waitFleetHealthy(ctx context.Context, env *Env, dyn dynamic.Interface) error {
	return waitRollouts(ctx, env, dyn, fleetNamespace, fleetSize, "Healthy", func(ro *rolloutsv1beta1.Rollout) bool {
		return ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy
	})
}

// waitRollouts lists the namespace's Rollouts until n of them, at their generation, pass is; what names that
// state in the log and the error.
func waitRollouts(ctx context.Context, env *Env, dyn dynamic.Interface, namespace string, n int, what string,
	is func(*rolloutsv1beta1.Rollout) bool) error {
	count, lastReport := 0, time.Now()
	err := wait.PollUntilContextTimeout(ctx, pollEvery, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := dyn.Resource(rolloutsResource).Namespace(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil // transient under load; retried until the timeout
		}
		count = 0
		for i := range list.Items {
			ro, err := rolloutFrom(&list.Items[i])
			if err != nil {
				return false, err
			}
			if ro.Status.ObservedGeneration == ro.Generation && is(ro) {
				count++
			}
		}
		if time.Since(lastReport) >= progressEvery {
			env.Logf("%d/%d Rollouts %s", count, n, what)
			lastReport = time.Now()
		}
		return count == n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d Rollouts %s (%d are): %w", n, what, count, err)
	}
	return nil
}

// forFleet runs fn for every application of the fleet, workers at a time.
func forFleet(ctx context.Context, workers int, fn func(context.Context, int) error) error {
	return forApps(ctx, fleetSize, workers, fn)
}

// forApps runs fn for applications 0 to n-1, workers at a time.
func forApps(ctx context.Context, n, workers int, fn func(context.Context, int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}
