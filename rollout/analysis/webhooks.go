package analysis

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	analysisadmission "github.com/flotilla-dev/flotilla/rollout/analysis/admission"
	"github.com/flotilla-dev/flotilla/webhooks"
)

// Paths of the module's validating webhooks; the chart's entries for them are named v<kind>.analysis.flotilla.dev.
const (
	ValidateAnalysisTemplatePath        = "/validate-analysis-flotilla-dev-v1alpha1-analysistemplate"
	ValidateClusterAnalysisTemplatePath = "/validate-analysis-flotilla-dev-v1alpha1-clusteranalysistemplate"
	ValidateAnalysisRunPath             = "/validate-analysis-flotilla-dev-v1alpha1-analysisrun"
)

// RegisterWebhooks serves the module's validating webhooks on srv; scheme must know the analysis.flotilla.dev
// kinds. Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, scheme *runtime.Scheme) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the analysis webhooks: server and scheme are required")
	}
	webhooks.Serve(srv, handlers(admission.NewDecoder(scheme)))
	return nil
}

func handlers(decoder admission.Decoder) map[string]admission.Handler {
	return map[string]admission.Handler{
		ValidateAnalysisTemplatePath:        webhooks.Validating(decoder, "AnalysisTemplate", analysisadmission.ValidateTemplate),
		ValidateClusterAnalysisTemplatePath: webhooks.Validating(decoder, "ClusterAnalysisTemplate", analysisadmission.ValidateClusterTemplate),
		ValidateAnalysisRunPath:             webhooks.Validating(decoder, "AnalysisRun", analysisadmission.ValidateRun),
	}
}
