package daemonset

import (
	"github.com/flotilla-dev/flotilla/webhooks/convert"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// ConversionCRDs: Advanced DaemonSets are stored as v1alpha1, which upstream OpenKruise before 1.9, its
// kubectl-kruise and the Rollout engine read, and served as v1beta1 too, converted by the manager.
var ConversionCRDs = []string{"daemonsets.apps.kruise.io"}

// Convert adds the v1alpha1 <-> v1beta1 DaemonSet conversion to the manager's registry.
var Convert = convert.HubSpoke(&kruiseappsv1alpha1.DaemonSet{}, &kruiseappsv1beta1.DaemonSet{},
	kruiseappsv1alpha1.ConvertDaemonSetToV1beta1, kruiseappsv1alpha1.ConvertDaemonSetFromV1beta1)
