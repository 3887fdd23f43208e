package bench

import (
	"math"
	"slices"
	"time"
)

// Units of Metric values. Values are in base units (seconds, bytes) so the
// JSON is unambiguous; the table formats them for reading.
const (
	UnitSeconds      = "s"
	UnitMilliseconds = "ms"
	UnitBytes        = "bytes"
	UnitCores        = "cores" // CPU seconds per wall second
	UnitCount        = "count"
	UnitNsPerOp      = "ns/op"
	UnitPerPod       = "per pod"
	UnitPerNode      = "per node"
	UnitPerRollout   = "per Rollout"
	UnitPerNamespace = "per namespace"
)

// Result is what one scenario measured: one object of bench-results.json.
type Result struct {
	Scenario    string      `json:"scenario"`
	Description string      `json:"description"`
	GoVersion   string      `json:"goVersion"`
	Commit      string      `json:"commit"`
	Dirty       bool        `json:"dirty,omitempty"`
	Machine     Machine     `json:"machine"`
	Cluster     ClusterSize `json:"cluster"`
	StartedAt   time.Time   `json:"startedAt"`
	// TotalSeconds is the whole scenario: cluster start, setup, measurement, teardown.
	TotalSeconds float64 `json:"totalSeconds"`
	// WallSeconds is the measured phase only.
	WallSeconds float64 `json:"wallSeconds"`
	// APIRequests are the manager's requests during the measured phase.
	APIRequests []RequestCount `json:"apiRequests,omitempty"`
	// SetupRequests are the manager's requests before the measured phase
	// (its start-up), where a scenario records them.
	SetupRequests []RequestCount `json:"setupRequests,omitempty"`
	// Processes is the usage of the manager and the baseline processes
	// during the measured phase, by process name.
	Processes map[string]Usage `json:"processes,omitempty"`
	// Latencies are scenario-specific distributions, by name.
	Latencies map[string]Summary `json:"latencies,omitempty"`
	Metrics   []Metric           `json:"metrics"`
	// Benchmarks are the go test -bench results of the micro-benchmarks.
	Benchmarks []Benchmark `json:"benchmarks,omitempty"`
	Error      string      `json:"error,omitempty"`
}

// ClusterSize says what the scenario ran on.
type ClusterSize struct {
	Nodes             int  `json:"nodes"`
	PodsPerNode       int  `json:"podsPerNode,omitempty"`
	ControllerManager bool `json:"controllerManager"`
	Scheduler         bool `json:"scheduler"`
	// Objects counts what the scenario created, by resource ("pods": 10000).
	Objects map[string]int `json:"objects,omitempty"`
}

// RequestCount is how many requests of one verb on one resource were sent.
type RequestCount struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	Count    int64  `json:"count"`
}

// Usage is one process's cost over a phase.
type Usage struct {
	PID          int     `json:"pid"`
	PeakRSSBytes uint64  `json:"peakRSSBytes"`
	CPUSeconds   float64 `json:"cpuSeconds"`
	WallSeconds  float64 `json:"wallSeconds"`
	// Cores is CPUSeconds / WallSeconds: 0.01 is 1% of one core.
	Cores float64 `json:"cores"`
}

// Summary is a latency distribution in milliseconds.
type Summary struct {
	N      int     `json:"n"`
	MinMs  float64 `json:"minMs"`
	P50Ms  float64 `json:"p50Ms"`
	P95Ms  float64 `json:"p95Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MaxMs  float64 `json:"maxMs"`
	MeanMs float64 `json:"meanMs"`
}

// Metric is one headline figure. Baseline is the same quantity for the
// native reference measured in the same run; Ratio is Value/Baseline.
type Metric struct {
	Name         string   `json:"name"`
	Unit         string   `json:"unit"`
	Value        float64  `json:"value"`
	Baseline     *float64 `json:"baseline,omitempty"`
	BaselineName string   `json:"baselineName,omitempty"`
	Ratio        *float64 `json:"ratio,omitempty"`
	Target       *Target  `json:"target,omitempty"`
	// Met is set when there is a target: whether the figure is within it.
	Met  *bool  `json:"met,omitempty"`
	Note string `json:"note,omitempty"`
}

// Target bounds a metric from above: its value, or its ratio when OnRatio.
type Target struct {
	Max     float64 `json:"max"`
	OnRatio bool    `json:"onRatio,omitempty"`
}

// Compared sets the baseline and the ratio against it. A zero baseline
// leaves the ratio unset: it would be infinite or meaningless.
func (m Metric) Compared(baselineName string, baseline float64) Metric {
	m.Baseline, m.BaselineName = &baseline, baselineName
	m.Ratio = ratio(m.Value, baseline)
	return m
}

// WithTarget bounds the value from above.
func (m Metric) WithTarget(limit float64) Metric {
	m.Target = &Target{Max: limit}
	return m
}

// WithRatioTarget bounds the ratio from above.
func (m Metric) WithRatioTarget(limit float64) Metric {
	m.Target = &Target{Max: limit, OnRatio: true}
	return m
}

func ratio(value, baseline float64) *float64 {
	if baseline == 0 || math.IsNaN(baseline) || math.IsInf(baseline, 0) {
		return nil
	}
	r := value / baseline
	return &r
}

// checked fills Met from the target; a ratio target without a ratio is
// not met, because nothing shows that it is.
func (m Metric) checked() Metric {
	if m.Target == nil {
		m.Met = nil
		return m
	}
	value := &m.Value
	if m.Target.OnRatio {
		value = m.Ratio
	}
	met := value != nil && *value <= m.Target.Max
	m.Met = &met
	return m
}

// Add appends metrics to the result.
func (r *Result) Add(metrics ...Metric) { r.Metrics = append(r.Metrics, metrics...) }

// AddLatency records a distribution and its p50 and p95 as metrics.
func (r *Result) AddLatency(name string, samples []time.Duration) Summary {
	s := Summarize(samples)
	if r.Latencies == nil {
		r.Latencies = map[string]Summary{}
	}
	r.Latencies[name] = s
	r.Add(
		Metric{Name: name + " p50", Unit: UnitMilliseconds, Value: s.P50Ms},
		Metric{Name: name + " p95", Unit: UnitMilliseconds, Value: s.P95Ms},
	)
	return s
}

// finish evaluates the targets.
func (r *Result) finish() {
	for i := range r.Metrics {
		r.Metrics[i] = r.Metrics[i].checked()
	}
}

// Summarize computes nearest-rank percentiles; an empty input gives zeros.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	var total time.Duration
	for _, d := range sorted {
		total += d
	}
	return Summary{
		N:      len(sorted),
		MinMs:  ms(sorted[0]),
		P50Ms:  ms(percentile(sorted, 50)),
		P95Ms:  ms(percentile(sorted, 95)),
		P99Ms:  ms(percentile(sorted, 99)),
		MaxMs:  ms(sorted[len(sorted)-1]),
		MeanMs: ms(total / time.Duration(len(sorted))),
	}
}

// percentile is the nearest-rank percentile of sorted, non-empty samples:
// the smallest sample that at least p% of the samples do not exceed.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// writes counts the requests that change state.
func writes(requests []RequestCount) int64 {
	var n int64
	for _, r := range requests {
		switch r.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
			n += r.Count
		}
	}
	return n
}

func total(requests []RequestCount) int64 {
	var n int64
	for _, r := range requests {
		n += r.Count
	}
	return n
}
