package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

const (
	pubNamespace = "bench-pub-eviction"
	pubName      = "bench-pub"
	// pubProtectedPods are the budget's pods, each evicted once; pubMaxUnavailable of them may go (200), so the
	// first 200 evictions are admitted and the other 300 refused.
	pubProtectedPods  = 500
	pubMaxUnavailable = "40%"
	// pubWarmUp unprotected pods are evicted first, untimed.
	pubWarmUp = 10
	// pubNodes hold the pods, bound by spec.nodeName (no scheduler runs).
	pubNodes = 10
	// pubPodWorkers is how many pod creates the setup keeps in flight.
	pubPodWorkers = 32
	// pubAppLabel tells the budget's pods ("protected") from the baseline's ("unprotected").
	pubAppLabel = "app"
	// pubReadyTimeout bounds each wait of the setup.
	pubReadyTimeout = 3 * time.Minute

	evictAdmitted = "admitted"
	evictRefused  = "refused"
)

var podUnavailableBudgetsResource = kruisepolicyv1alpha1.GroupVersion.WithResource("podunavailablebudgets")

// pubEvictionCounters tell what the pod webhook made of the evictions: the baseline's are exempt.
var pubEvictionCounters = []counterSpec{
	{"webhook: evictions admitted", "flotilla_podunavailablebudget_pod_disruptions_total", map[string]string{"operation": "EVICT", "result": "admitted"}},
	{"webhook: evictions refused", "flotilla_podunavailablebudget_pod_disruptions_total", map[string]string{"operation": "EVICT", "result": "refused"}},
	{"webhook: evictions exempt (no budget)", "flotilla_podunavailablebudget_pod_disruptions_total", map[string]string{"operation": "EVICT", "result": "exempt"}},
	{"webhook: evictions failed", "flotilla_podunavailablebudget_pod_disruptions_total", map[string]string{"operation": "EVICT", "result": "error"}},
	writeConflicts,
}

// pubEviction times evictions of Ready pods a PodUnavailableBudget protects, admitted and refused, against
// evictions of pods no budget selects in the same namespace, taken in turn with them.
func pubEviction() Scenario {
	return Scenario{
		Name: "pub-eviction",
		Description: fmt.Sprintf("policy/v1 evictions (client round trip, the pod validating webhook included) of %d Ready bare pods "+
			"a PodUnavailableBudget selects (maxUnavailable %s, protect-total-replicas %d), one at a time, each pod once: the "+
			"first %d admitted (201), the rest refused (429); in turn with each, an eviction of a pod of the same namespace "+
			"no budget selects, after %d untimed; %d kwok nodes, pods bound by spec.nodeName",
			pubProtectedPods, pubMaxUnavailable, pubProtectedPods, pubAllowed(), pubWarmUp, pubNodes),
		Cluster: cluster.Options{Nodes: pubNodes},
		Timeout: 8 * time.Minute,
		Run:     runPubEviction,
	}
}

// pubAllowed is how many evictions the budget admits: maxUnavailable of the total, rounded up, as the budget
// counts it.
func pubAllowed() int {
	v := intstr.FromString(pubMaxUnavailable)
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, pubProtectedPods, true)
	if err != nil {
		panic(err) // a constant
	}
	return n
}

// pubRound is one protected pod's eviction and the baseline's taken in turn with it.
type pubRound struct {
	Outcome             string
	Protected, Baseline time.Duration
}

func runPubEviction(ctx context.Context, env *Env, res *Result) error {
	baselinePods := pubProtectedPods + pubWarmUp
	res.Cluster.Objects = map[string]int{"pods": pubProtectedPods + baselinePods, "podunavailablebudgets": 1}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return fmt.Errorf("creating a dynamic client: %w", err)
	}
	if err := namespaceWithAccount(ctx, env.Kube, pubNamespace, nil); err != nil {
		return err
	}
	if err := env.StartManager(ctx); err != nil {
		return err
	}
	begin := time.Now()
	if err := createPubPods(ctx, env.Kube, "protected", pubProtectedPods); err != nil {
		return err
	}
	if err := createPubPods(ctx, env.Kube, "unprotected", baselinePods); err != nil {
		return err
	}
	if err := awaitReadyPods(ctx, env.Kube, pubProtectedPods+baselinePods); err != nil {
		return err
	}
	env.Logf("%d pods Ready in %v", pubProtectedPods+baselinePods, time.Since(begin).Round(time.Millisecond))
	if err := createObject(ctx, dyn, podUnavailableBudgetsResource, benchPub()); err != nil {
		return err
	}
	if err := awaitBudget(ctx, env, dyn); err != nil {
		return err
	}
	var rounds []pubRound
	var counters []float64
	phase, err := env.Measure(ctx, nil, func(ctx context.Context) error {
		before, err := env.ManagerSamples(ctx)
		if err != nil {
			return err
		}
		if rounds, err = evictRounds(ctx, env); err != nil {
			return err
		}
		after, err := env.ManagerSamples(ctx)
		counters = counterRises(pubEvictionCounters, before, after)
		return err
	})
	if err != nil {
		return err
	}
	res.Record(phase)
	return addPubEvictionMetrics(res, rounds, counters)
}

// createPubPods creates n bare pods labelled app=<app>, bound to the kwok nodes in turn.
func createPubPods(ctx context.Context, kube kubernetes.Interface, app string, n int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(pubPodWorkers)
	for i := range n {
		g.Go(func() error {
			tmpl := benchPodTemplate(map[string]string{pubAppLabel: app, BenchLabel: pubNamespace})
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pubPodName(app, i), Namespace: pubNamespace, Labels: tmpl.Labels},
				Spec: tmpl.Spec}
			pod.Spec.NodeName = cluster.NodeNamePrefix + strconv.Itoa(i%pubNodes)
			_, err := kube.CoreV1().Pods(pubNamespace).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating pod %s: %w", pod.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

func pubPodName(app string, i int) string { return fmt.Sprintf("%s-%04d", app, i) }

// awaitReadyPods waits until the namespace holds want Ready pods.
func awaitReadyPods(ctx context.Context, kube kubernetes.Interface, want int) error {
	ready := 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, pubReadyTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(pubNamespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil // transient under load; retried until the timeout
		}
		ready = 0
		for i := range pods.Items {
			if isPodReady(&pods.Items[i]) {
				ready++
			}
		}
		return ready >= want, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d Ready pods (%d): %w", want, ready, err)
	}
	return nil
}

// benchPub protects the protected pods: bare pods, so the total they count is given by annotation.
func benchPub() *kruisepolicyv1alpha1.PodUnavailableBudget {
	meta := benchObjectMeta(pubNamespace, pubName)
	meta.Annotations = map[string]string{kruisepolicyv1alpha1.PubProtectTotalReplicasAnnotation: strconv.Itoa(pubProtectedPods)}
	return &kruisepolicyv1alpha1.PodUnavailableBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruisepolicyv1alpha1.GroupVersion.String(), Kind: "PodUnavailableBudget"},
		ObjectMeta: meta,
		Spec: kruisepolicyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{pubAppLabel: "protected"}},
			MaxUnavailable: ptr.To(intstr.FromString(pubMaxUnavailable)),
		},
	}
}

// awaitBudget waits until the budget's status counts every protected pod available with its allowance, and
// the controller has marked every one of them, so that the webhook holds each.
func awaitBudget(ctx context.Context, env *Env, dyn dynamic.Interface) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, pubReadyTimeout, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(podUnavailableBudgetsResource).Namespace(pubNamespace).Get(ctx, pubName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pub, err := decode[kruisepolicyv1alpha1.PodUnavailableBudget](u)
		if err != nil {
			return false, err
		}
		marked, err := markedPods(ctx, env.Kube)
		if err != nil {
			return false, nil
		}
		s := pub.Status
		last = fmt.Sprintf("status %+v, %d pods marked", s, marked)
		return s.TotalReplicas == pubProtectedPods && s.CurrentAvailable == pubProtectedPods &&
			s.UnavailableAllowed == int32(pubAllowed()) && marked == pubProtectedPods, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the budget over %d pods (last: %s): %w", pubProtectedPods, last, err)
	}
	env.Logf("budget ready: %s", last)
	return nil
}

// markedPods counts the pods that name the budget in their related-pub annotation.
func markedPods(ctx context.Context, kube kubernetes.Interface) (int, error) {
	pods, err := kube.CoreV1().Pods(pubNamespace).List(ctx, metav1.ListOptions{LabelSelector: pubAppLabel + "=protected"})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range pods.Items {
		if pods.Items[i].Annotations[kruisepolicyv1alpha1.PodRelatedPubAnnotation] == pubName {
			n++
		}
	}
	return n, nil
}

// evictRounds evicts the warm-up's pods untimed, then each protected pod in turn with an unprotected one,
// alternating which goes first.
func evictRounds(ctx context.Context, env *Env) ([]pubRound, error) {
	for i := range pubWarmUp {
		if _, err := evictPod(ctx, env.Kube, pubPodName("unprotected", pubProtectedPods+i)); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	env.Logf("evicting %d protected pods, each in turn with an unprotected one", pubProtectedPods)
	rounds := make([]pubRound, 0, pubProtectedPods)
	for i := range pubProtectedPods {
		var r pubRound
		var protectedErr, baselineErr error
		evictProtected := func() {
			r.Protected, protectedErr = evictPod(ctx, env.Kube, pubPodName("protected", i))
		}
		evictBaseline := func() {
			r.Baseline, baselineErr = evictPod(ctx, env.Kube, pubPodName("unprotected", i))
		}
		if i%2 == 0 {
			evictBaseline()
			evictProtected()
		} else {
			evictProtected()
			evictBaseline()
		}
		if baselineErr != nil {
			return nil, fmt.Errorf("evicting an unprotected pod: %w", baselineErr)
		}
		switch {
		case protectedErr == nil:
			r.Outcome = evictAdmitted
		case apierrors.IsTooManyRequests(protectedErr):
			r.Outcome = evictRefused
		default:
			return nil, fmt.Errorf("evicting a protected pod: %w", protectedErr)
		}
		rounds = append(rounds, r)
	}
	return rounds, nil
}

// evictPod evicts one pod and times the call; an eviction refused comes back as its error, timed too.
func evictPod(ctx context.Context, kube kubernetes.Interface, name string) (time.Duration, error) {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pubNamespace}}
	begin := time.Now()
	err := kube.PolicyV1().Evictions(pubNamespace).Evict(ctx, ev)
	took := time.Since(begin)
	if err != nil {
		return took, fmt.Errorf("evicting pod %s: %w", name, err)
	}
	return took, nil
}

// pubOutcomeFigure is the evictions of one outcome against the baseline's taken in turn with them.
type pubOutcomeFigure struct {
	Outcome             string
	Protected, Baseline Summary
}

// pubFigures summarises the rounds by outcome, admitted first; an outcome no round had is left out.
func pubFigures(rounds []pubRound) []pubOutcomeFigure {
	var out []pubOutcomeFigure
	for _, outcome := range []string{evictAdmitted, evictRefused} {
		var protected, baseline []time.Duration
		for _, r := range rounds {
			if r.Outcome == outcome {
				protected, baseline = append(protected, r.Protected), append(baseline, r.Baseline)
			}
		}
		if len(protected) > 0 {
			out = append(out, pubOutcomeFigure{Outcome: outcome, Protected: Summarize(protected), Baseline: Summarize(baseline)})
		}
	}
	return out
}

// addPubEvictionMetrics adds each outcome's p50 and p99 against the baseline's, and the counts: the budget
// must have admitted exactly what it allows.
func addPubEvictionMetrics(res *Result, rounds []pubRound, counters []float64) error {
	const baseline = "pods no budget selects"
	if res.Latencies == nil {
		res.Latencies = map[string]Summary{}
	}
	counts := map[string]int{}
	for _, f := range pubFigures(rounds) {
		counts[f.Outcome] = f.Protected.N
		name := "eviction " + f.Outcome
		if f.Outcome == evictRefused {
			name += " (429)"
		}
		res.Latencies[name] = f.Protected
		res.Latencies["no budget, in turn with "+f.Outcome] = f.Baseline
		note := fmt.Sprintf("%d evictions of protected pods, one at a time, in turn with %d of pods no budget selects", f.Protected.N, f.Baseline.N)
		if f.Outcome == evictRefused {
			note += "; a refused eviction ends at admission, while the baseline's go on to the API server's pod writes"
		} else {
			note += "; each admitted one is recorded in the budget's status before the webhook answers"
		}
		res.Add(
			Metric{Name: name + " p50", Unit: UnitMilliseconds, Value: f.Protected.P50Ms, Note: note}.Compared(baseline, f.Baseline.P50Ms),
			Metric{Name: name + " p99", Unit: UnitMilliseconds, Value: f.Protected.P99Ms}.Compared(baseline, f.Baseline.P99Ms),
		)
	}
	allowed := pubAllowed()
	res.Add(
		Metric{Name: "evictions admitted (201)", Unit: UnitCount, Value: float64(counts[evictAdmitted]),
			Note: fmt.Sprintf("of %d; the budget allows %d", len(rounds), allowed)},
		Metric{Name: "evictions refused (429)", Unit: UnitCount, Value: float64(counts[evictRefused])},
	)
	res.Add(counterMetrics(pubEvictionCounters, counters, "", "the measured phase, warm-up included")...)
	if counts[evictAdmitted] != allowed {
		return fmt.Errorf("the budget admitted %d evictions of %d, it allows %d", counts[evictAdmitted], len(rounds), allowed)
	}
	return nil
}
