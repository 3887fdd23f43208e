package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the engine's metrics.
const (
	ReleasesName     = "flotilla_rollout_releases_total"
	BatchesReadyName = "flotilla_batchrelease_batches_ready_total"
)

// Engine holds the Rollout engine's metrics.
type Engine struct {
	// Releases counts finished releases by how they ended: Success, Rollback, RolloutDisabled or
	// RolloutDeleting.
	Releases *prometheus.CounterVec
	// BatchesReady counts batches that became ready.
	BatchesReady prometheus.Counter
}

// NewEngine creates the engine's metrics and registers them on reg.
func NewEngine(reg prometheus.Registerer) (*Engine, error) {
	e := &Engine{
		Releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ReleasesName,
			Help: "Releases the Rollout controller finished, by how they ended (Success, Rollback, RolloutDisabled, RolloutDeleting).",
		}, []string{"result"}),
		BatchesReady: prometheus.NewCounter(prometheus.CounterOpts{
			Name: BatchesReadyName,
			Help: "Batches the BatchRelease controller saw become ready.",
		}),
	}
	return e, errors.Join(reg.Register(e.Releases), reg.Register(e.BatchesReady))
}

// ReleaseFinished counts a finished release; a nil Engine counts nothing.
func (e *Engine) ReleaseFinished(result string) {
	if e != nil && result != "" {
		e.Releases.WithLabelValues(result).Inc()
	}
}

// BatchReady counts a batch that became ready; a nil Engine counts nothing.
func (e *Engine) BatchReady() {
	if e != nil {
		e.BatchesReady.Inc()
	}
}
