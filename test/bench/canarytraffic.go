package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/cluster"
)

const (
	trafficNamespace = "bench-traffic"
	trafficReplicas  = 10
	// Populate names its one Deployment app-0000; the Rollout takes its name.
	trafficWorkload = "app-0000"
	trafficRollout  = trafficWorkload
	trafficService  = "web"
	trafficIngress  = "web"
	trafficCanary   = trafficIngress + "-canary"
	// trafficGraceSeconds is the Rollout's gracePeriodSeconds (the API's
	// default is 3), so that the figure is the engine's own latency.
	trafficGraceSeconds = 0
	// trafficLatencyTarget is the bound on the median, on top of
	// the grace period.
	trafficLatencyTarget = 200 * time.Millisecond
	// trafficSettle lets the manager's caches go quiet before the run.
	trafficSettle = 5 * time.Second
)

// trafficSteps: a pod or a few per step, each with its own weight, so
// every step yields one sample and the weights tell the steps apart.
var trafficSteps = []trafficStep{{1, 10}, {2, 20}, {3, 30}, {5, 50}, {8, 80}}

// trafficChange is a new pod template without a rollout-id: no batch
// labels, whose patches would sit between a pod Ready and its batch Ready.
var trafficChange = []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"VERSION","value":"v2"}]}]}}}}`)

// canaryTrafficStep measures how soon a canary step's weight reaches the
// nginx canary Ingress once the step's pods are Ready.
func canaryTrafficStep() Scenario {
	return Scenario{
		Name: "canary-traffic-step",
		Description: fmt.Sprintf("a %d-replica Deployment behind a Service and an nginx Ingress, released by a v1beta1 Rollout "+
			"in %d traffic steps (pause 0, gracePeriodSeconds %d): last pod of each batch Ready -> canary-weight on the canary Ingress",
			trafficReplicas, len(trafficSteps), trafficGraceSeconds),
		Cluster: cluster.Options{ControllerManager: true, Scheduler: true, Nodes: 3},
		Timeout: 10 * time.Minute,
		Run:     runCanaryTraffic,
	}
}

func runCanaryTraffic(ctx context.Context, env *Env, res *Result) error {
	res.Cluster.Objects = map[string]int{"deployments": 1, "pods": trafficReplicas, "services": 1, "ingresses": 1, "rollouts": 1}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return fmt.Errorf("creating a dynamic client: %w", err)
	}
	if err := setUpCanary(ctx, env, dyn, res); err != nil {
		return err
	}
	kcm, err := env.ControllerManagerProc()
	if err != nil {
		return err
	}
	run, err := runCanary(ctx, env, dyn, kcm)
	res.Record(run.phase)
	if err != nil {
		return err
	}
	steps, err := analyseTraffic(run.timeline, trafficSteps)
	if err != nil {
		return err
	}
	logCanary(env, run.timeline, steps)
	addCanaryMetrics(res, run.timeline, steps, run.phase)
	return verifyCanaryGone(ctx, env)
}

// setUpCanary creates the Deployment, its Service and Ingress, starts the
// manager and puts the Rollout in place, Healthy.
func setUpCanary(ctx context.Context, env *Env, dyn dynamic.Interface, res *Result) error {
	took, err := Populate(ctx, env, trafficNamespace, 1, trafficReplicas)
	if err != nil {
		return err
	}
	res.Add(Metric{Name: "pods Running and Ready", Unit: UnitSeconds, Value: took.Seconds(),
		Note: fmt.Sprintf("setup: 1 Deployment of %d replicas", trafficReplicas)})
	if err := createNetwork(ctx, env); err != nil {
		return err
	}
	if err := env.StartManager(ctx); err != nil {
		return err
	}
	if err := createCanaryRollout(ctx, dyn); err != nil {
		return err
	}
	if err := waitHealthy(ctx, dyn, trafficNamespace, trafficRollout); err != nil {
		return err
	}
	return sleep(ctx, trafficSettle)
}

// createNetwork creates the stable Service and the nginx Ingress in front
// of it; no ingress controller runs, the objects are what is measured.
func createNetwork(ctx context.Context, env *Env) error {
	labels := map[string]string{BenchLabel: trafficNamespace}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: trafficService, Namespace: trafficNamespace, Labels: labels},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": trafficWorkload},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := env.Kube.CoreV1().Services(trafficNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Service %s: %w", trafficService, err)
	}
	if _, err := env.Kube.NetworkingV1().Ingresses(trafficNamespace).Create(ctx, stableIngress(labels), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Ingress %s: %w", trafficIngress, err)
	}
	return nil
}

func stableIngress(labels map[string]string) *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
		Name: trafficService, Port: networkingv1.ServiceBackendPort{Number: 80}}}
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: trafficIngress, Namespace: trafficNamespace, Labels: labels,
			Annotations: map[string]string{"nginx.ingress.kubernetes.io/proxy-body-size": "8m"}},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("nginx"),
			Rules: []networkingv1.IngressRule{{Host: "web.example", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
					{Path: "/", PathType: &prefix, Backend: backend}}}}}},
		},
	}
}

// canaryRolloutObject is written as unstructured because the typed
// gracePeriodSeconds is omitempty: a typed 0 would be left out and the
// CRD would default it to 3.
func canaryRolloutObject() *unstructured.Unstructured {
	steps := make([]any, 0, len(trafficSteps))
	for _, s := range trafficSteps {
		steps = append(steps, map[string]any{"replicas": int64(s.Replicas), "traffic": fmt.Sprintf("%d%%", s.Weight),
			"pause": map[string]any{"duration": int64(0)}})
	}
	routing := map[string]any{"service": trafficService, "gracePeriodSeconds": int64(trafficGraceSeconds),
		"ingress": map[string]any{"classType": "nginx", "name": trafficIngress}}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rolloutsv1beta1.GroupVersion.String(), "kind": "Rollout",
		"metadata": map[string]any{"name": trafficRollout, "namespace": trafficNamespace,
			"labels": map[string]any{BenchLabel: trafficNamespace}},
		"spec": map[string]any{
			"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": trafficWorkload},
			"strategy": map[string]any{"canary": map[string]any{
				"steps": steps, "trafficRoutings": []any{routing},
			}},
		},
	}}
}

// createCanaryRollout creates the Rollout and checks that the grace
// period was stored as asked.
func createCanaryRollout(ctx context.Context, dyn dynamic.Interface) error {
	u, err := dyn.Resource(rolloutsResource).Namespace(trafficNamespace).Create(ctx, canaryRolloutObject(), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating Rollout %s: %w", trafficRollout, err)
	}
	ro, err := rolloutFrom(u)
	if err != nil {
		return err
	}
	return checkGrace(ro)
}

func checkGrace(ro *rolloutsv1beta1.Rollout) error {
	routings := ro.Spec.Strategy.GetTrafficRoutings()
	if len(routings) != 1 || routings[0].GracePeriodSeconds != trafficGraceSeconds {
		return fmt.Errorf("the Rollout %s was stored with trafficRoutings %+v, not one of gracePeriodSeconds %d",
			ro.Name, routings, trafficGraceSeconds)
	}
	return nil
}

// waitHealthy waits until the manager has taken the named Rollout on.
func waitHealthy(ctx context.Context, dyn dynamic.Interface, namespace, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(rolloutsResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // retried until the timeout
		}
		ro, err := rolloutFrom(u)
		if err != nil {
			return false, err
		}
		return ro.Status.ObservedGeneration == ro.Generation && ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for Rollout %s to be Healthy: %w", name, err)
	}
	return nil
}

// canaryRun is the measured release.
type canaryRun struct {
	phase    Phase
	timeline trafficTimeline
}

func runCanary(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc) (canaryRun, error) {
	ctx, cancel := context.WithTimeout(ctx, releaseRunTimeout)
	defer cancel()
	rec, err := startCanaryRecorders(ctx, env, dyn)
	if err != nil {
		return canaryRun{}, err
	}
	if err := sleep(ctx, watchConnect); err != nil {
		return canaryRun{}, errors.Join(err, rec.stop())
	}
	env.Logf("release: applying the change to Deployment %s, released by Rollout %s", trafficWorkload, trafficRollout)
	var run canaryRun
	run.phase, err = env.Measure(ctx, []Proc{kcm}, func(ctx context.Context) error {
		return rec.release(ctx, env, &run.timeline)
	})
	if err = errors.Join(err, rec.stop()); err != nil {
		return run, err
	}
	rec.fill(&run.timeline)
	return run, nil
}

// verifyCanaryGone checks that Completed meant it for the network: the
// canary Ingress was removed while finalising.
func verifyCanaryGone(ctx context.Context, env *Env) error {
	_, err := env.Kube.NetworkingV1().Ingresses(trafficNamespace).Get(ctx, trafficCanary, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("getting Ingress %s: %w", trafficCanary, err)
	}
	return fmt.Errorf("the release reported Completed but Ingress %s remains", trafficCanary)
}

// applyTrafficChange patches the Deployment's pod template.
func applyTrafficChange(ctx context.Context, env *Env) error {
	_, err := env.Kube.AppsV1().Deployments(trafficNamespace).Patch(ctx, trafficWorkload, types.StrategicMergePatchType,
		trafficChange, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("changing deployment %s: %w", trafficWorkload, err)
	}
	return nil
}

// addCanaryMetrics adds each step's latency, their median (held to the
// target) and maximum, and the manager's usage.
func addCanaryMetrics(res *Result, t trafficTimeline, steps []trafficStepFigures, release Phase) {
	res.Add(Metric{Name: "release total", Unit: UnitSeconds, Value: t.Completed.Sub(t.Start).Seconds(),
		Note: "change applied -> Rollout Healthy and Completed; canary-weight values seen: " + weightList(t.Weights)})
	for i, s := range steps {
		res.Add(Metric{Name: fmt.Sprintf("step %d: batch Ready -> weight %d", i+1, s.Step.Weight), Unit: UnitMilliseconds,
			Value: ms(s.Latency), Note: fmt.Sprintf("%d new pods; after the last pod Ready: %s", s.Step.Replicas, describePath(s.Ready, s.Path))})
	}
	summary := Summarize(latencies(steps))
	if res.Latencies == nil {
		res.Latencies = map[string]Summary{}
	}
	res.Latencies["batch Ready to canary-weight"] = summary
	target := trafficLatencyTarget + trafficGraceSeconds*time.Second
	res.Add(
		Metric{Name: "batch Ready -> canary-weight p50", Unit: UnitMilliseconds, Value: summary.P50Ms,
			Note: fmt.Sprintf("median of %d steps; target 200 ms + gracePeriodSeconds (%d s)", summary.N, trafficGraceSeconds)}.
			WithTarget(ms(target)),
		Metric{Name: "batch Ready -> canary-weight max", Unit: UnitMilliseconds, Value: summary.MaxMs},
	)
	m, k := release.Usage[ManagerName], release.Usage[ControllerManagerName]
	res.Add(
		Metric{Name: "manager peak RSS (release)", Unit: UnitBytes, Value: float64(m.PeakRSSBytes)}.
			Compared(ControllerManagerName, float64(k.PeakRSSBytes)),
		Metric{Name: "manager CPU (release)", Unit: UnitCores, Value: m.Cores}.Compared(ControllerManagerName, k.Cores),
	)
}

func logCanary(env *Env, t trafficTimeline, steps []trafficStepFigures) {
	env.Logf("release: %v; canary-weight values seen: %s", t.Completed.Sub(t.Start).Round(time.Millisecond), weightList(t.Weights))
	for i, s := range steps {
		env.Logf("  step %d (%d pods, weight %d): weight written %v after the last pod Ready: %s", i+1, s.Step.Replicas,
			s.Step.Weight, s.Latency.Round(time.Millisecond), describePath(s.Ready, s.Path))
	}
}
