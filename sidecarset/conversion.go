package sidecarset

import (
	"github.com/flotilla-dev/flotilla/webhooks/convert"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1/promoted"
)

// ConversionCRDs: SidecarSets are stored as v1alpha1, which upstream OpenKruise before 1.9, its kubectl-kruise
// and the SidecarSet controller read, and served as v1beta1 too, converted by the manager.
var ConversionCRDs = []string{"sidecarsets.apps.kruise.io"}

// Convert adds the v1alpha1 <-> v1beta1 SidecarSet conversion to the manager's registry.
var Convert = convert.HubSpoke(&kruiseappsv1alpha1.SidecarSet{}, &promoted.SidecarSet{},
	promoted.ConvertSidecarSetFromV1alpha1, promoted.ConvertSidecarSetToV1alpha1)
