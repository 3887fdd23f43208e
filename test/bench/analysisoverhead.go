package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/prometheus"
)

const (
	analysisNamespace = "bench-analysis"
	analysisRollouts  = 100
	analysisReplicas  = 2
	// analysisInterval is the metric's interval: from the end of one measurement to the start of the next.
	analysisInterval = 10 * time.Second
	// analysisSettle follows the last run's first measurement: time for every run to take its cadence and for
	// the manager's heap to hold the runs, before the window opens.
	analysisSettle       = 3 * analysisInterval
	analysisWindow       = idleWindow
	analysisTemplateName = "error-ratio"
	// analysisGauge is the series the scenario serves, one per application, for Prometheus to scrape.
	analysisGauge      = "bench_error_ratio"
	analysisErrorRatio = "0.01"
	// PrometheusName is the real Prometheus process in Result.Processes.
	PrometheusName = "prometheus"
	// Targets of the analysis-overhead issue: the analysis adds at most 5% of one core and 20 MiB.
	analysisCPUTarget = 0.05
	analysisRSSTarget = 20 << 20
)

var (
	analysisTemplatesResource = analysisv1alpha1.GroupVersion.WithResource("analysistemplates")
	rolloutAnalysesResource   = analysisv1alpha1.GroupVersion.WithResource("rolloutanalyses")
	analysisRunsResource      = analysisv1alpha1.GroupVersion.WithResource("analysisruns")
)

func analysisTypeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: analysisv1alpha1.GroupVersion.String(), Kind: kind}
}

// analysisOverhead measures what metric analysis costs the manager: 100 releases held at a paused step, first
// without analysis, then each with a background AnalysisRun querying a real Prometheus every 10 s.
func analysisOverhead() Scenario {
	return Scenario{
		Name: "analysis-overhead",
		Description: fmt.Sprintf("manager CPU and RSS over %.0f s with %d Rollouts paused mid-release, each with a background "+
			"AnalysisRun of one Prometheus metric every %v (a real Prometheus), against the same Rollouts without analysis; "+
			"the manager's query latency", analysisWindow.Seconds(), analysisRollouts, analysisInterval),
		Cluster: cluster.Options{ControllerManager: true, Scheduler: true, Nodes: 4, Args: nativeArgs()},
		Timeout: 15 * time.Minute,
		Run:     runAnalysisOverhead,
	}
}

func runAnalysisOverhead(ctx context.Context, env *Env, res *Result) error {
	res.Cluster.Objects = map[string]int{"deployments": analysisRollouts, "pods": analysisRollouts * analysisReplicas,
		"rollouts": analysisRollouts, "analysistemplates": 1, "rolloutanalyses": analysisRollouts, "analysisruns": analysisRollouts}
	prom, stop, err := startAnalysisPrometheus(ctx, env)
	if err != nil {
		return err
	}
	defer stop()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return fmt.Errorf("creating a dynamic client: %w", err)
	}
	if err := setUpPausedReleases(ctx, env, dyn, res); err != nil {
		return err
	}
	procs := []Proc{{Name: PrometheusName, PID: prom.PID()}}
	without, err := measureOverheadWindow(ctx, env, procs, "without analysis")
	if err != nil {
		return err
	}
	if err := startAnalyses(ctx, env, dyn, prom.URL, res); err != nil {
		return err
	}
	with, err := measureOverheadWindow(ctx, env, procs, "with analysis")
	res.Record(with.phase)
	if err != nil {
		return err
	}
	running, err := runningAnalyses(ctx, dyn)
	if err != nil {
		return err
	}
	addAnalysisOverheadMetrics(res, without, with, running)
	return nil
}

// startAnalysisPrometheus serves every application's error ratio on a loopback port and starts Debian's
// prometheus scraping it, then waits until the last application's series has been scraped.
func startAnalysisPrometheus(ctx context.Context, env *Env) (*prometheus.Server, func(), error) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return nil, nil, errors.New("prometheus is not installed (as root on Debian or Ubuntu, make bench installs the package prometheus)")
	}
	target, closeGauge, err := serveErrorRatios()
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(env.WorkDir, "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		closeGauge()
		return nil, nil, err
	}
	prom, err := prometheus.Run(bin, dir, target)
	if err != nil {
		closeGauge()
		return nil, nil, err
	}
	stop := func() { prom.Stop(); closeGauge() }
	env.Logf("prometheus at %s scraping %s every %v", prom.URL, target, prometheus.ScrapeInterval)
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	last := fmt.Sprintf("%s{app=%q}", analysisGauge, fleetApp(analysisRollouts-1))
	if err := prometheus.Await(waitCtx, prom.URL, last, analysisErrorRatio); err != nil {
		stop()
		return nil, nil, err
	}
	return prom, stop, nil
}

// serveErrorRatios serves a gauge per application in Prometheus's text format on a loopback port and returns
// that address and a function that closes the server.
func serveErrorRatios() (string, func(), error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE %s gauge\n", analysisGauge)
	for i := range analysisRollouts {
		fmt.Fprintf(&b, "%s{app=%q} %s\n", analysisGauge, fleetApp(i), analysisErrorRatio)
	}
	body := []byte(b.String())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("serving the gauge: %w", err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(l) }()
	return l.Addr().String(), func() { _ = srv.Close() }, nil
}

// setUpPausedReleases creates the Deployments, starts the manager, gives each Deployment a Rollout whose first
// step waits for approval, releases a new template on every one and waits until every release is paused there.
func setUpPausedReleases(ctx context.Context, env *Env, dyn dynamic.Interface, res *Result) error {
	ready, err := Populate(ctx, env, analysisNamespace, analysisRollouts, analysisReplicas)
	if err != nil {
		return err
	}
	res.Add(Metric{Name: "pods Running and Ready", Unit: UnitSeconds, Value: ready.Seconds(),
		Note: fmt.Sprintf("setup: %d pods of %d Deployments", analysisRollouts*analysisReplicas, analysisRollouts)})
	if err := env.StartManager(ctx); err != nil {
		return err
	}
	env.Logf("creating %d Rollouts", analysisRollouts)
	err = forApps(ctx, analysisRollouts, createWorkers, func(ctx context.Context, i int) error {
		return createObject(ctx, dyn, rolloutsResource, pausedRollout(i))
	})
	if err != nil {
		return err
	}
	if err := waitRollouts(ctx, env, dyn, analysisNamespace, analysisRollouts, "Healthy", func(ro *rolloutsv1beta1.Rollout) bool {
		return ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy
	}); err != nil {
		return err
	}
	env.Logf("releasing a new template on %d Deployments", analysisRollouts)
	if err := patchApps(ctx, env, analysisNamespace, analysisRollouts, releaseChange(false, "v2")); err != nil {
		return err
	}
	begin := time.Now()
	if err := waitRollouts(ctx, env, dyn, analysisNamespace, analysisRollouts, "paused at step 1", releasePaused); err != nil {
		return err
	}
	res.Add(Metric{Name: "release sent -> every Rollout paused at step 1", Unit: UnitSeconds, Value: time.Since(begin).Seconds(),
		Note: "setup"})
	return sleep(ctx, idleSettle)
}

// pausedRollout is application i's partition-style Rollout: half the replicas, then a pause until approval,
// which never comes, so that the release stays in progress.
func pausedRollout(i int) *rolloutsv1beta1.Rollout {
	app := fleetApp(i)
	return &rolloutsv1beta1.Rollout{
		TypeMeta:   rolloutTypeMeta,
		ObjectMeta: benchObjectMeta(analysisNamespace, app),
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: app},
			Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{Steps: []rolloutsv1beta1.CanaryStep{
				{Replicas: ptr.To(intstr.FromString("50%"))},
				{Replicas: ptr.To(intstr.FromString("100%"))},
			}}},
		},
	}
}

func releasePaused(ro *rolloutsv1beta1.Rollout) bool {
	return ro.Status.Phase == rolloutsv1beta1.RolloutPhaseProgressing && ro.Status.CurrentStepIndex == 1 &&
		ro.Status.CurrentStepState == rolloutsv1beta1.CanaryStepStatePaused
}

// startAnalyses creates the AnalysisTemplate and a RolloutAnalysis with a background run per Rollout, spread
// over one interval as releases started at different times would be, then waits until every run has measured
// and a little more.
func startAnalyses(ctx context.Context, env *Env, dyn dynamic.Interface, promURL string, res *Result) error {
	if err := createObject(ctx, dyn, analysisTemplatesResource, errorRatioTemplate(promURL)); err != nil {
		return err
	}
	env.Logf("creating %d RolloutAnalyses over %v", analysisRollouts, analysisInterval)
	begin := time.Now()
	tick := time.NewTicker(analysisInterval / analysisRollouts)
	defer tick.Stop()
	for i := range analysisRollouts {
		if err := createObject(ctx, dyn, rolloutAnalysesResource, backgroundAnalysis(i)); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	if err := waitAnalysesMeasured(ctx, env, dyn); err != nil {
		return err
	}
	res.Add(Metric{Name: "RolloutAnalyses created -> every run measured once", Unit: UnitSeconds, Value: time.Since(begin).Seconds(),
		Note: fmt.Sprintf("setup: creates spread over %v", analysisInterval)})
	return sleep(ctx, analysisSettle)
}

// errorRatioTemplate is the one metric: the application's error ratio from Prometheus every interval, until the
// run is terminated, passing below 5%.
func errorRatioTemplate(promURL string) *analysisv1alpha1.AnalysisTemplate {
	return &analysisv1alpha1.AnalysisTemplate{
		TypeMeta:   analysisTypeMeta("AnalysisTemplate"),
		ObjectMeta: benchObjectMeta(analysisNamespace, analysisTemplateName),
		Spec: analysisv1alpha1.AnalysisTemplateSpec{
			Args: []analysisv1alpha1.Argument{{Name: "rollout"}},
			Metrics: []analysisv1alpha1.Metric{{
				Name: "error-ratio", Interval: &metav1.Duration{Duration: analysisInterval}, SuccessCondition: "result < 0.05",
				Provider: analysisv1alpha1.MetricProvider{Prometheus: &analysisv1alpha1.PrometheusMetric{
					Address: promURL, Query: fmt.Sprintf(`max(%s{app="{{args.rollout}}"})`, analysisGauge)}},
			}},
		},
	}
}

// backgroundAnalysis binds application i's Rollout to a background run of the template from step 1.
func backgroundAnalysis(i int) *analysisv1alpha1.RolloutAnalysis {
	app := fleetApp(i)
	return &analysisv1alpha1.RolloutAnalysis{
		TypeMeta:   analysisTypeMeta("RolloutAnalysis"),
		ObjectMeta: benchObjectMeta(analysisNamespace, app),
		Spec: analysisv1alpha1.RolloutAnalysisSpec{
			RolloutRef: analysisv1alpha1.RolloutRef{Name: app},
			Background: &analysisv1alpha1.BackgroundAnalysis{Templates: []analysisv1alpha1.TemplateRef{{Name: analysisTemplateName}}},
		},
	}
}

// waitAnalysesMeasured lists the AnalysisRuns until every Rollout's is Running with a successful measurement;
// a run that ended is an error, since the window would not measure what it says.
func waitAnalysesMeasured(ctx context.Context, env *Env, dyn dynamic.Interface) error {
	measured, lastReport := 0, time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		runs, err := listAnalysisRuns(ctx, dyn)
		if err != nil {
			return false, nil // transient under load; retried until the timeout
		}
		measured = 0
		for _, run := range runs {
			if run.Status.Phase.Completed() {
				return false, fmt.Errorf("AnalysisRun %s ended %s: %s", run.Name, run.Status.Phase, run.Status.Message)
			}
			if run.Status.Phase == analysisv1alpha1.AnalysisPhaseRunning && len(run.Status.MetricResults) > 0 &&
				run.Status.MetricResults[0].Successful > 0 {
				measured++
			}
		}
		if time.Since(lastReport) >= progressEvery {
			env.Logf("%d/%d AnalysisRuns measured", measured, analysisRollouts)
			lastReport = time.Now()
		}
		return measured == analysisRollouts, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d AnalysisRuns to measure (%d did): %w", analysisRollouts, measured, err)
	}
	return nil
}

func listAnalysisRuns(ctx context.Context, dyn dynamic.Interface) ([]analysisv1alpha1.AnalysisRun, error) {
	list, err := dyn.Resource(analysisRunsResource).Namespace(analysisNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing AnalysisRuns: %w", err)
	}
	out := make([]analysisv1alpha1.AnalysisRun, 0, len(list.Items))
	for i := range list.Items {
		run, err := decode[analysisv1alpha1.AnalysisRun](&list.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *run)
	}
	return out, nil
}

// runningAnalyses counts the runs still Running after the window.
func runningAnalyses(ctx context.Context, dyn dynamic.Interface) (int, error) {
	runs, err := listAnalysisRuns(ctx, dyn)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, run := range runs {
		if run.Status.Phase == analysisv1alpha1.AnalysisPhaseRunning {
			n++
		}
	}
	return n, nil
}

// measureOverheadWindow measures the manager (and procs) over one window and reads how its analysis counters
// and query-duration histogram rose meanwhile.
func measureOverheadWindow(ctx context.Context, env *Env, procs []Proc, what string) (overheadWindow, error) {
	before, err := env.ManagerSamples(ctx)
	if err != nil {
		return overheadWindow{}, err
	}
	env.Logf("measuring a window of %v %s", analysisWindow, what)
	phase, err := env.Measure(ctx, procs, func(ctx context.Context) error { return sleep(ctx, analysisWindow) })
	w := overheadWindow{phase: phase}
	if err != nil {
		return w, err
	}
	after, err := env.ManagerSamples(ctx)
	if err != nil {
		return w, err
	}
	w.counters = counterRises(analysisCounters, before, after)
	w.latency, err = histogramRise(measurementDurationMetric, prometheusProvider, before, after)
	return w, err
}
