package metrics

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// Names of the engine's metrics.
const (
	ReleasesName           = "flotilla_rollout_releases_total"
	ReleaseDurationName    = "flotilla_rollout_release_duration_seconds"
	ReleasesInProgressName = "flotilla_rollout_releases_in_progress"
	BatchesReadyName       = "flotilla_batchrelease_batches_ready_total"
)

// Engine holds the Rollout engine's metrics.
type Engine struct {
	// Releases counts finished releases by how they ended: Success, Rollback, RolloutDisabled or
	// RolloutDeleting.
	Releases *prometheus.CounterVec
	// ReleaseDuration observes how long finished releases ran, by how they ended.
	ReleaseDuration *prometheus.HistogramVec
	// InProgress is the number of Rollouts releasing now.
	InProgress prometheus.Gauge
	// BatchesReady counts batches that became ready.
	BatchesReady prometheus.Counter

	mu        sync.Mutex
	releasing map[types.NamespacedName]struct{}
}

// NewEngine creates the engine's metrics and registers them on reg.
func NewEngine(reg prometheus.Registerer) (*Engine, error) {
	e := &Engine{
		Releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ReleasesName,
			Help: "Releases the Rollout controller finished, by how they ended (Success, Rollback, RolloutDisabled, RolloutDeleting).",
		}, []string{"result"}),
		ReleaseDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: ReleaseDurationName,
			Help: "How long finished releases ran, from the Rollout's Progressing condition turning True to the end, by how they ended.",
			// From a pause-free release of a few pods to releases paused for manual approval over days.
			Buckets: prometheus.ExponentialBuckets(5, 3, 11),
		}, []string{"result"}),
		InProgress: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: ReleasesInProgressName,
			Help: "Rollouts whose phase is Progressing, as this manager last reconciled them.",
		}),
		BatchesReady: prometheus.NewCounter(prometheus.CounterOpts{
			Name: BatchesReadyName,
			Help: "Batches the BatchRelease controller saw become ready.",
		}),
		releasing: map[types.NamespacedName]struct{}{},
	}
	return e, errors.Join(reg.Register(e.Releases), reg.Register(e.ReleaseDuration), reg.Register(e.InProgress),
		reg.Register(e.BatchesReady))
}

// ReleaseFinished counts a finished release and, when its start is known (non-zero), how long it ran; a nil
// Engine counts nothing.
func (e *Engine) ReleaseFinished(result string, started, now time.Time) {
	if e == nil || result == "" {
		return
	}
	e.Releases.WithLabelValues(result).Inc()
	if !started.IsZero() && now.After(started) {
		e.ReleaseDuration.WithLabelValues(result).Observe(now.Sub(started).Seconds())
	}
}

// Releasing records whether the Rollout key is releasing now; a Rollout that is gone is not. A nil Engine
// records nothing.
func (e *Engine) Releasing(key types.NamespacedName, releasing bool) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if releasing {
		e.releasing[key] = struct{}{}
	} else {
		delete(e.releasing, key)
	}
	e.InProgress.Set(float64(len(e.releasing)))
}

// BatchReady counts a batch that became ready; a nil Engine counts nothing.
func (e *Engine) BatchReady() {
	if e != nil {
		e.BatchesReady.Inc()
	}
}
