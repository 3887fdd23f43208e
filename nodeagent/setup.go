// Package nodeagent is Flotilla's node agent module. The agent itself (cmd/nodeagent) runs on every node
// and recreates containers, pulls images and runs pods' custom probes through CRI; this package is the
// manager's side of it: the ContainerRecreateRequest webhook (defaults, validation, what the agent needs
// copied from the pod), the controller that keeps requests in step with their pods and ends them, the
// controller that keeps one NodeImage per node; behind ImagePullJobGate, the ImagePullJob and
// ImageListPullJob controllers that write the images to pull into the NodeImages, with their webhooks; and
// behind PodProbeMarkerGate, the PodProbeMarker controller that writes markers' probes into the NodePodProbes
// of their pods' nodes, the NodePodProbe controller that keeps one per node and turns the agents' results
// into pod conditions, labels and annotations, and the PodProbeMarker webhook.
package nodeagent

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/crrmanager"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/nodeimagemanager"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/podprobe"
	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruiseappsv1alpha1.GroupVersion.WithKind("ContainerRecreateRequest"),
	kruiseappsv1alpha1.GroupVersion.WithKind("NodeImage"), kruiseappsv1alpha1.GroupVersion.WithKind("ImagePullJob"),
	kruiseappsv1alpha1.GroupVersion.WithKind("ImageListPullJob"), kruiseappsv1alpha1.GroupVersion.WithKind("PodProbeMarker"),
	kruiseappsv1alpha1.GroupVersion.WithKind("NodePodProbe")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "ContainerRecreateRequest"},
	{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "NodeImage"}, {Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "ImagePullJob"},
	{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "ImageListPullJob"}, {Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "PodProbeMarker"},
	{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "NodePodProbe"}}

// SetupWithManager registers the ContainerRecreateRequest controller and mutating webhook, the NodeImage
// controller, the ImagePullJob and ImageListPullJob controllers and webhooks, and the PodProbeMarker and
// NodePodProbe controllers and the PodProbeMarker webhook. The ContainerRecreateRequest webhook reads pods past
// the cache: it copies the containers' current IDs and restart counts, which the node agent compares with the
// running containers. With ImagePullJobGate off (and the CloneSet's image pre-download, which needs it, off
// too) no job controller runs and the jobs' validating webhooks refuse every job, as upstream's do; with
// PodProbeMarkerGate off no pod probe controller runs and the PodProbeMarker webhook refuses every marker.
func SetupWithManager(ctx context.Context, mgr manager.Manager, opts module.Options) error {
	r := &crrmanager.Reconciler{}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the ContainerRecreateRequest controller: %w", err)
	}
	// First: it indexes the NodeImages by the ImagePullJobs their tags name, which the job controller reads.
	if err := (&nodeimagemanager.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the NodeImage controller: %w", err)
	}
	if err := RegisterWebhook(mgr.GetWebhookServer(), mgr.GetAPIReader(), mgr.GetScheme()); err != nil {
		return err
	}
	if err := setupImageJobs(mgr, opts); err != nil {
		return err
	}
	return setupPodProbes(mgr, opts.Features.Enabled(feature.PodProbeMarkerGate))
}

// setupImageJobs registers the ImagePullJob and ImageListPullJob controllers when their gate is on, and their
// webhooks either way.
func setupImageJobs(mgr manager.Manager, opts module.Options) error {
	if !opts.Features.ImagePullJobsOn() {
		return RegisterImageJobWebhooks(mgr.GetWebhookServer(), mgr.GetScheme(), errImagePullJobGateOff)
	}
	if err := (&imagejob.PullJobReconciler{ConfigNamespace: DaemonConfigNamespace(opts)}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ImagePullJob controller: %w", err)
	}
	if err := (&imagejob.ListJobReconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ImageListPullJob controller: %w", err)
	}
	return RegisterImageJobWebhooks(mgr.GetWebhookServer(), mgr.GetScheme(), nil)
}

// setupPodProbes registers the PodProbeMarker and NodePodProbe controllers when PodProbeMarkerGate is on, and
// the PodProbeMarker webhook either way.
func setupPodProbes(mgr manager.Manager, enabled bool) error {
	if !enabled {
		return RegisterPodProbeMarkerWebhook(mgr.GetWebhookServer(), mgr.GetScheme(), errPodProbeMarkerGateOff)
	}
	// First: it indexes the NodePodProbes by the markers whose probes they hold, which both controllers read.
	if err := (&podprobe.MarkerReconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodProbeMarker controller: %w", err)
	}
	if err := (&podprobe.NodeReconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the NodePodProbe controller: %w", err)
	}
	return RegisterPodProbeMarkerWebhook(mgr.GetWebhookServer(), mgr.GetScheme(), nil)
}

// errImagePullJobGateOff is upstream's refusal while the gate is off.
var errImagePullJobGateOff = fmt.Errorf("feature-gate %s is not enabled", feature.ImagePullJobGate)

// errPodProbeMarkerGateOff is upstream's refusal while the gate is off.
var errPodProbeMarkerGateOff = fmt.Errorf("feature-gate %s is not enabled", feature.PodProbeMarkerGate)

// DaemonConfigNamespace is where ImagePullJobs' pull secrets are copied for the node agents: upstream's
// environment variable KRUISE_DAEMON_CONFIG_NS when set, else the manager's namespace, where the chart runs the
// agents too (upstream's default, kruise-daemon-config, is a namespace of its own its chart creates). The
// agents read the copies wherever the NodeImages name them.
func DaemonConfigNamespace(opts module.Options) string {
	if ns := os.Getenv(kruiseappsv1alpha1.KruiseDaemonConfigNamespaceEnv); ns != "" {
		return ns
	}
	return opts.Namespace
}
