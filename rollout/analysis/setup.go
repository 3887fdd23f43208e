// Package analysis is Flotilla's metric analysis module (analysis.flotilla.dev, a Flotilla addition upstream
// Kruise Rollouts lacks): the AnalysisRun controller, which measures a run's metrics through Prometheus, web
// and Job providers and records every verdict; the RolloutAnalysis controller, which creates the runs of a
// Rollout's gated steps and of its background as the Rollout's release reaches them and reports their verdicts
// in the RolloutAnalysis's status (for the Rollout engine to gate its steps on); and the validating webhook of
// AnalysisTemplates, ClusterAnalysisTemplates and AnalysisRuns.
package analysis

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/binding"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/controller"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/module"
)

// Kinds are the kinds the module needs served before it runs; the RolloutAnalysis controller watches Rollouts.
var Kinds = []schema.GroupVersionKind{
	analysisv1alpha1.GroupVersion.WithKind("AnalysisRun"),
	analysisv1alpha1.GroupVersion.WithKind("AnalysisTemplate"),
	analysisv1alpha1.GroupVersion.WithKind("ClusterAnalysisTemplate"),
	analysisv1alpha1.GroupVersion.WithKind("RolloutAnalysis"),
	rolloutsv1beta1.GroupVersion.WithKind("Rollout"),
}

// Reconciles are the kinds the module acts on: it runs AnalysisRuns, which read the templates, and binds them
// to Rollouts through RolloutAnalyses.
var Reconciles = []schema.GroupKind{
	{Group: analysisv1alpha1.GroupVersion.Group, Kind: "AnalysisRun"},
	{Group: analysisv1alpha1.GroupVersion.Group, Kind: "AnalysisTemplate"},
	{Group: analysisv1alpha1.GroupVersion.Group, Kind: "ClusterAnalysisTemplate"},
	{Group: analysisv1alpha1.GroupVersion.Group, Kind: "RolloutAnalysis"},
}

// SetupWithManager registers the AnalysisRun and RolloutAnalysis controllers and the validating webhook.
func SetupWithManager(_ context.Context, mgr manager.Manager, _ module.Options) error {
	if err := (&controller.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the AnalysisRun controller: %w", err)
	}
	if err := (&binding.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the RolloutAnalysis controller: %w", err)
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetScheme())
}
