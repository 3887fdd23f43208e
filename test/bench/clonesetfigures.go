package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// workloadRun is what one run of a CloneSet scenario recorded. Every time
// is the sending of the change or a watch event's arrival on the
// harness's clock.
type workloadRun struct {
	Start time.Time
	// Started counts the pods created (scale) or given the new image
	// (update) as they appeared; Finished those seen Ready (on the new
	// image).
	Started, Finished []mark
	// Done is the workload's status showing the run complete.
	Done time.Time
	// Counters are the rises of cloneSetCounters over the run.
	Counters []float64
}

// runFigures are one run's durations.
type runFigures struct {
	// Total runs from the change to the status showing it complete.
	Total time.Duration
	// AllStarted and AllFinished run from the change to the last pod
	// started and finished; StatusLag from the last pod finished to the
	// status.
	AllStarted, AllFinished, StatusLag time.Duration
}

// analyseRun derives a run's figures for a workload of n pods.
func analyseRun(r workloadRun, n int64) (runFigures, error) {
	started, ok := firstMark(r.Started, n)
	if !ok {
		return runFigures{}, fmt.Errorf("%d pods seen started, want %d", lastValue(r.Started), n)
	}
	finished, ok := firstMark(r.Finished, n)
	if !ok {
		return runFigures{}, fmt.Errorf("%d pods seen Ready, want %d", lastValue(r.Finished), n)
	}
	if r.Done.IsZero() {
		return runFigures{}, fmt.Errorf("the status never showed the run complete")
	}
	return runFigures{
		Total: r.Done.Sub(r.Start), AllStarted: started.At.Sub(r.Start),
		AllFinished: finished.At.Sub(r.Start), StatusLag: r.Done.Sub(finished.At),
	}, nil
}

func lastValue(list []mark) int64 {
	if len(list) == 0 {
		return 0
	}
	return list[len(list)-1].Value
}

// meanFigures averages runs; none gives zeros.
func meanFigures(runs []runFigures) runFigures {
	var sum runFigures
	if len(runs) == 0 {
		return sum
	}
	for _, r := range runs {
		sum.Total += r.Total
		sum.AllStarted += r.AllStarted
		sum.AllFinished += r.AllFinished
		sum.StatusLag += r.StatusLag
	}
	n := time.Duration(len(runs))
	return runFigures{Total: sum.Total / n, AllStarted: sum.AllStarted / n, AllFinished: sum.AllFinished / n, StatusLag: sum.StatusLag / n}
}

// sumPhases joins phases as one: walls, requests and CPU add up, peak RSS
// is the highest.
func sumPhases(phases []Phase) Phase {
	out := Phase{ManagerRunning: len(phases) > 0}
	counts := map[RequestKey]float64{}
	for _, p := range phases {
		out.Wall += p.Wall
		out.ManagerRunning = out.ManagerRunning && p.ManagerRunning
		for _, r := range p.Requests {
			counts[RequestKey{r.Verb, r.Resource}] += float64(r.Count)
		}
		out.Usage = addUsage(out.Usage, p.Usage)
	}
	out.Requests = DiffRequests(nil, counts)
	return out
}

func addUsage(into, more map[string]Usage) map[string]Usage {
	if into == nil {
		into = map[string]Usage{}
	}
	for name, u := range more {
		sum := into[name]
		sum.PID = u.PID
		sum.PeakRSSBytes = max(sum.PeakRSSBytes, u.PeakRSSBytes)
		sum.CPUSeconds += u.CPUSeconds
		sum.WallSeconds += u.WallSeconds
		sum.Cores = 0
		if sum.WallSeconds > 0 {
			sum.Cores = sum.CPUSeconds / sum.WallSeconds
		}
		into[name] = sum
	}
	return into
}

// scaleRun is one workload scaled from 0 to its replicas.
type scaleRun struct {
	Kind     string
	Figures  runFigures
	Phase    Phase
	Counters []float64
}

// scaleComparison is the CloneSet's runs against the ReplicaSet's: mean
// figures and summed phases of each kind.
type scaleComparison struct {
	CloneSet, ReplicaSet           runFigures
	CloneSetPhase, ReplicaSetPhase Phase
	CloneSetRuns, ReplicaSetRuns   int
	// Gated are the gated ReplicaSet's figures, GatedRuns how many runs they are the mean of (0: none ran).
	Gated     runFigures
	GatedRuns int
	// CloneSetCounters are the rises of cloneSetCounters over the
	// CloneSet's runs.
	CloneSetCounters []float64
	// Order lists every run with its time, in the order they ran.
	Order string
}

func compareScale(runs []scaleRun) (scaleComparison, error) {
	byKind := map[string][]scaleRun{}
	var order []string
	for _, r := range runs {
		byKind[r.Kind] = append(byKind[r.Kind], r)
		order = append(order, fmt.Sprintf("%s %s", r.Kind, FormatValue(UnitSeconds, r.Figures.Total.Seconds())))
	}
	cs, rs, gated := byKind[kindCloneSet], byKind[kindReplicaSet], byKind[kindGatedReplicaSet]
	if len(cs) == 0 || len(rs) == 0 {
		return scaleComparison{}, fmt.Errorf("%d CloneSet and %d ReplicaSet runs: need both", len(cs), len(rs))
	}
	c := scaleComparison{
		CloneSet: meanFigures(figuresOf(cs)), ReplicaSet: meanFigures(figuresOf(rs)),
		CloneSetPhase: sumPhases(phasesOf(cs)), ReplicaSetPhase: sumPhases(phasesOf(rs)),
		CloneSetRuns: len(cs), ReplicaSetRuns: len(rs), CloneSetCounters: countersOf(cs),
		GatedRuns: len(gated), Order: strings.Join(order, ", "),
	}
	if len(gated) > 0 {
		c.Gated = meanFigures(figuresOf(gated))
	}
	return c, nil
}

func figuresOf(runs []scaleRun) []runFigures {
	out := make([]runFigures, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.Figures)
	}
	return out
}

func countersOf(runs []scaleRun) []float64 {
	var sum []float64
	for _, r := range runs {
		sum = addRises(sum, r.Counters)
	}
	return sum
}

func phasesOf(runs []scaleRun) []Phase {
	out := make([]Phase, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.Phase)
	}
	return out
}

// perPodWrites is each write series divided by pods, most frequent first,
// as "patch pods/status 2.00, create pods 1.00, ...".
func perPodWrites(requests []RequestCount, pods int) string {
	if pods <= 0 {
		return ""
	}
	w := onlyWrites(requests)
	slices.SortStableFunc(w, func(a, b RequestCount) int { return cmp.Compare(b.Count, a.Count) })
	parts := make([]string, 0, len(w))
	for i, r := range w {
		if i == maxRequestLines {
			parts = append(parts, fmt.Sprintf("... %d more", len(w)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s %.2f", r.Verb, r.Resource, float64(r.Count)/float64(pods)))
	}
	return strings.Join(parts, ", ")
}

// replacement says how a workload's pods came to run the new image.
type replacement struct {
	Pods int
	// Kept pods existed before the change; InPlace of them run the new
	// image after exactly one container restart.
	Kept, InPlace int
	// OnImage pods, kept or not, report the new image.
	OnImage int
}

// countReplacement counts the pods that run the in-place scenarios' new image, and how they got it.
func countReplacement(pods []corev1.Pod, before map[types.UID]bool) replacement {
	r := replacement{Pods: len(pods)}
	for i := range pods {
		p := &pods[i]
		on := len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].Image == inPlaceImage
		if on {
			r.OnImage++
		}
		if !before[p.UID] {
			continue
		}
		r.Kept++
		if on && p.Status.ContainerStatuses[0].RestartCount == 1 {
			r.InPlace++
		}
	}
	return r
}

// uidsOf is the set of the pods' UIDs.
func uidsOf(pods []corev1.Pod) map[types.UID]bool {
	out := make(map[types.UID]bool, len(pods))
	for i := range pods {
		out[pods[i].UID] = true
	}
	return out
}

// usageNote renders a process's CPU over a phase for a metric's note.
func usageNote(name string, u Usage) string {
	return fmt.Sprintf("%s: %.2f CPU s in %.1f s", name, u.CPUSeconds, u.WallSeconds)
}

// writeConflicts and requestsRejected count the manager's requests the API server answered 409 and 429.
var (
	writeConflicts   = counterSpec{"manager write conflicts (HTTP 409)", "rest_client_requests_total", map[string]string{"code": "409"}}
	requestsRejected = counterSpec{"manager requests rejected (HTTP 429)", "rest_client_requests_total", map[string]string{"code": "429"}}
)

// reconcileTotal is controller-runtime's reconcile counter.
const reconcileTotal = "controller_runtime_reconcile_total"

// counterSpec is the sum of the series of one of the manager's counters
// whose labels include Labels.
type counterSpec struct {
	Name, Metric string
	Labels       map[string]string
}

// cloneSetCounters tell where a run's writes and time went: writes lost
// to a conflict (each one costs the reconcile that sent it), requests API
// Priority and Fairness turned away (each retried after the second the API
// server asks for), and the reconciles of the two controllers that write a
// CloneSet's pods.
var cloneSetCounters = []counterSpec{
	writeConflicts,
	requestsRejected,
	{"CloneSet reconciles", reconcileTotal, map[string]string{"controller": "cloneset-controller"}},
	{"CloneSet reconciles requeued after a delay", reconcileTotal,
		map[string]string{"controller": "cloneset-controller", "result": "requeue_after"}},
	{"CloneSet reconciles failed", reconcileTotal, map[string]string{"controller": "cloneset-controller", "result": "error"}},
	{"pod-readiness reconciles", reconcileTotal, map[string]string{"controller": "pod-readiness-controller"}},
}

// sumCounter adds up the series the spec selects.
func sumCounter(samples []Sample, spec counterSpec) float64 {
	var sum float64
	for _, s := range samples {
		if s.Name == spec.Metric && labelsInclude(s.Labels, spec.Labels) {
			sum += s.Value
		}
	}
	return sum
}

func labelsInclude(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// counterRises is how much each counter rose between two readings.
func counterRises(specs []counterSpec, before, after []Sample) []float64 {
	out := make([]float64, len(specs))
	for i, spec := range specs {
		out[i] = sumCounter(after, spec) - sumCounter(before, spec)
	}
	return out
}

// addRises sums counter rises of several runs.
func addRises(into, more []float64) []float64 {
	if into == nil {
		into = make([]float64, len(more))
	}
	for i := range min(len(into), len(more)) {
		into[i] += more[i]
	}
	return into
}

// counterMetrics renders counter rises, each as a count with suffix in its name.
func counterMetrics(specs []counterSpec, rises []float64, suffix, note string) []Metric {
	out := make([]Metric, 0, len(rises))
	for i, v := range rises {
		if i < len(specs) {
			out = append(out, Metric{Name: specs[i].Name + suffix, Unit: UnitCount, Value: v, Note: note})
		}
	}
	return out
}
