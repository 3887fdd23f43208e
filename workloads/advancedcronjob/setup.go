// Package advancedcronjob is Flotilla's AdvancedCronJob module: the controller that creates a Job, a
// BroadcastJob or an ImageListPullJob on each run of a cron schedule, and its admission webhooks. BroadcastJobs
// it creates are run by the BroadcastJob controller, ImageListPullJobs by the node agent module's (with
// ImagePullJobGate), Jobs by kube-controller-manager's.
package advancedcronjob

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	acjadmission "github.com/flotilla-dev/flotilla/workloads/advancedcronjob/admission"
	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob/internal/controller"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Kinds are the kinds the module needs served before it runs: it creates and watches BroadcastJobs and
// ImageListPullJobs too.
var Kinds = []schema.GroupVersionKind{
	kruiseappsv1alpha1.GroupVersion.WithKind("AdvancedCronJob"),
	kruiseappsv1alpha1.GroupVersion.WithKind("BroadcastJob"),
	kruiseappsv1alpha1.GroupVersion.WithKind("ImageListPullJob"),
}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "AdvancedCronJob"}}

// SetupWithManager registers the AdvancedCronJob controller and its admission webhooks. With ImagePullJobGate
// off (and the CloneSet's image pre-download, which turns it on, off too) the validating webhook refuses an
// imageListPullJobTemplate, as the ImageListPullJob webhook then refuses every ImageListPullJob.
func SetupWithManager(_ context.Context, mgr manager.Manager, opts module.Options) error {
	if err := (&controller.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the AdvancedCronJob controller: %w", err)
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetScheme(), admissionOptions(opts.Features))
}

// admissionOptions refuse ImageListPullJob templates while nothing would run their ImageListPullJobs, with the
// message the ImageListPullJob webhook refuses them with.
func admissionOptions(g feature.Gates) acjadmission.Options {
	if g.ImagePullJobsOn() {
		return acjadmission.Options{}
	}
	return acjadmission.Options{ImageListPullJobRefusal: fmt.Errorf("feature-gate %s is not enabled", feature.ImagePullJobGate)}
}
