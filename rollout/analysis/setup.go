// Package analysis is Flotilla's metric analysis module (analysis.flotilla.dev, a Flotilla addition upstream
// Kruise Rollouts lacks): the AnalysisRun controller, which measures a run's metrics through Prometheus, web
// and Job providers and records every verdict, and the validating webhook of AnalysisTemplates,
// ClusterAnalysisTemplates and AnalysisRuns. Binding runs to Rollouts is not part of it yet.
package analysis

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/controller"
	"github.com/flotilla-dev/flotilla/rollout/module"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{
	analysisv1alpha1.GroupVersion.WithKind("AnalysisRun"),
	analysisv1alpha1.GroupVersion.WithKind("AnalysisTemplate"),
	analysisv1alpha1.GroupVersion.WithKind("ClusterAnalysisTemplate"),
}

// Reconciles are the kinds the module acts on: it runs AnalysisRuns, which read the templates.
var Reconciles = []schema.GroupKind{
	{Group: analysisv1alpha1.GroupVersion.Group, Kind: "AnalysisRun"},
	{Group: analysisv1alpha1.GroupVersion.Group, Kind: "AnalysisTemplate"},
	{Group: analysisv1alpha1.GroupVersion.Group, Kind: "ClusterAnalysisTemplate"},
}

// SetupWithManager registers the AnalysisRun controller and the validating webhook.
func SetupWithManager(_ context.Context, mgr manager.Manager, _ module.Options) error {
	if err := (&controller.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the AnalysisRun controller: %w", err)
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetScheme())
}
