package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

// maxValue and maxMessage bound what one measurement keeps of its value and message.
const (
	maxValue   = 256
	maxMessage = 512
)

// Observation is what a provider saw for one measurement.
type Observation struct {
	// Value is the measured result, as conditions read it: a float64, a string, a bool, a []any or a
	// map[string]any.
	Value any
	// Done is false while the measurement is in flight (a Job that has not finished).
	Done bool
	// Phase is the provider's own verdict (a Job's outcome); empty means the conditions judge Value.
	Phase analysisv1alpha1.AnalysisPhase
	// Message explains the provider's verdict.
	Message string
	// Metadata is kept on the measurement, for the provider to find it again.
	Metadata map[string]string
	// Err is set when the measurement could not be taken.
	Err error
}

// Measure turns an observation into the metric's measurement number index, started at started: the
// provider's verdict or error, else the conditions' verdict on the value.
func Measure(ctx context.Context, m *analysisv1alpha1.Metric, index int32, started, now time.Time, o Observation) analysisv1alpha1.Measurement {
	meas := analysisv1alpha1.Measurement{Index: index, StartedAt: metav1.NewTime(started), Metadata: o.Metadata,
		Phase: analysisv1alpha1.AnalysisPhaseRunning}
	switch {
	case o.Err != nil:
		meas.Phase, meas.Message = analysisv1alpha1.AnalysisPhaseError, o.Err.Error()
	case !o.Done:
		meas.Message = o.Message
		return meas
	case o.Phase != "":
		meas.Phase, meas.Message = o.Phase, o.Message
	default:
		meas.Phase, meas.Message = Judge(ctx, m, o.Value)
		meas.Value = FormatValue(o.Value)
	}
	meas.Message = shorten(meas.Message, maxMessage)
	meas.FinishedAt = &metav1.Time{Time: now}
	return meas
}

// FormatValue is a value as a measurement records it: JSON, or Go's notation for what JSON cannot hold (NaN,
// infinities), shortened past maxValue characters.
func FormatValue(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return shorten(fmt.Sprint(v), maxValue)
	}
	return shorten(string(raw), maxValue)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// Record adds a measurement to the metric's result in status (created if missing): a new one, or the one in
// flight it finishes. It counts finished measurements, keeps the latest MeasurementRetention, and sets the
// metric's phase from its limits.
func Record(status *analysisv1alpha1.AnalysisRunStatus, m *analysisv1alpha1.Metric, meas analysisv1alpha1.Measurement) {
	res := ensureResult(status, m.Name)
	if last := InFlight(res); last != nil && last.Index == meas.Index {
		*last = meas
	} else {
		res.Measurements = append(res.Measurements, meas)
	}
	if n := len(res.Measurements); n > analysisv1alpha1.MeasurementRetention {
		res.Measurements = res.Measurements[n-analysisv1alpha1.MeasurementRetention:]
	}
	count(res, meas.Phase)
	res.Phase, res.Message = metricPhase(m, res, meas.Message)
}

func ensureResult(status *analysisv1alpha1.AnalysisRunStatus, name string) *analysisv1alpha1.MetricResult {
	if res := FindResult(status, name); res != nil {
		return res
	}
	status.MetricResults = append(status.MetricResults, analysisv1alpha1.MetricResult{Name: name,
		Phase: analysisv1alpha1.AnalysisPhasePending})
	return &status.MetricResults[len(status.MetricResults)-1]
}

func count(res *analysisv1alpha1.MetricResult, phase analysisv1alpha1.AnalysisPhase) {
	switch phase {
	case analysisv1alpha1.AnalysisPhaseSuccessful:
		res.Successful++
	case analysisv1alpha1.AnalysisPhaseFailed:
		res.Failed++
	case analysisv1alpha1.AnalysisPhaseInconclusive:
		res.Inconclusive++
		res.ConsecutiveError = 0
		return
	case analysisv1alpha1.AnalysisPhaseError:
		res.Error++
		res.ConsecutiveError++
		return
	default:
		return
	}
	res.Count++
	res.ConsecutiveError = 0
}

// metricPhase is a metric's phase from its counts and limits; last is the latest measurement's message.
func metricPhase(m *analysisv1alpha1.Metric, res *analysisv1alpha1.MetricResult, last string) (analysisv1alpha1.AnalysisPhase, string) {
	errorLimit := int32(analysisv1alpha1.DefaultConsecutiveErrorLimit)
	if m.ConsecutiveErrorLimit != nil {
		errorLimit = *m.ConsecutiveErrorLimit
	}
	switch {
	case res.Failed > m.FailureLimit:
		return analysisv1alpha1.AnalysisPhaseFailed, fmt.Sprintf("%d of %d measurements failed, more than failureLimit %d",
			res.Failed, res.Count, m.FailureLimit)
	case res.Inconclusive > m.InconclusiveLimit:
		return analysisv1alpha1.AnalysisPhaseInconclusive, fmt.Sprintf("%d measurements inconclusive, more than inconclusiveLimit %d",
			res.Inconclusive, m.InconclusiveLimit)
	case res.ConsecutiveError > errorLimit:
		return analysisv1alpha1.AnalysisPhaseError, shorten(fmt.Sprintf("%d measurements in a row could not be taken, more than consecutiveErrorLimit %d: %s",
			res.ConsecutiveError, errorLimit, last), maxMessage)
	case m.Count > 0 && res.Count >= m.Count:
		return analysisv1alpha1.AnalysisPhaseSuccessful, fmt.Sprintf("%d measurements: %d successful, %d failed (and %d inconclusive)",
			res.Count, res.Successful, res.Failed, res.Inconclusive)
	}
	return analysisv1alpha1.AnalysisPhaseRunning, ""
}
