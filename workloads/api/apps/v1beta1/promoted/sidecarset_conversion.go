package promoted

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// A SidecarSet is stored as v1alpha1 and served as v1beta1 too; the forms differ in two places, and each shows
// a setting in its own form only:
//   - v1alpha1's namespace is, in v1beta1, a namespaceSelector on the namespace's kubernetes.io/metadata.name
//     label (which selects exactly that namespace, and no other); such a selector, alone, converts back into
//     namespace, so that a v1beta1 client's read-modify-write leaves a v1alpha1 namespace as it was (a
//     v1alpha1 namespaceSelector of that one label comes back as the namespace it selects: the same set);
//   - v1alpha1's label apps.kruise.io/sidecarset-custom-version, when not empty, is v1beta1's
//     spec.customVersion.
// Everything else is the same type in both.

var errNilObject = errors.New("conversion of a nil object")

// ConvertSidecarSetFromV1alpha1 converts a stored v1alpha1 SidecarSet into its v1beta1 form.
func ConvertSidecarSetFromV1alpha1(src *kruiseappsv1alpha1.SidecarSet, dst *SidecarSet) error {
	if src == nil || dst == nil {
		return errNilObject
	}
	in := src.DeepCopy()
	dst.ObjectMeta = in.ObjectMeta
	s := in.Spec
	dst.Spec = SidecarSetSpec{Selector: s.Selector, NamespaceSelector: s.NamespaceSelector, InitContainers: s.InitContainers,
		Containers: s.Containers, Volumes: s.Volumes, UpdateStrategy: s.UpdateStrategy, InjectionStrategy: s.InjectionStrategy,
		ImagePullSecrets: s.ImagePullSecrets, RevisionHistoryLimit: s.RevisionHistoryLimit, PatchPodMetadata: s.PatchPodMetadata}
	if s.Namespace != "" {
		// namespace wins over a selector beside it, as upstream's conversion has it (validation forbids both).
		dst.Spec.NamespaceSelector = namespaceSelector(s.Namespace)
	}
	if v := dst.Labels[kruiseappsv1alpha1.SidecarSetCustomVersionLabel]; v != "" {
		dst.Spec.CustomVersion = v
		delete(dst.Labels, kruiseappsv1alpha1.SidecarSetCustomVersionLabel)
	}
	dst.Status = in.Status
	return nil
}

// ConvertSidecarSetToV1alpha1 converts a v1beta1 SidecarSet into the stored v1alpha1 form.
func ConvertSidecarSetToV1alpha1(src *SidecarSet, dst *kruiseappsv1alpha1.SidecarSet) error {
	if src == nil || dst == nil {
		return errNilObject
	}
	in := src.DeepCopy()
	dst.ObjectMeta = in.ObjectMeta
	s := in.Spec
	dst.Spec = kruiseappsv1alpha1.SidecarSetSpec{Selector: s.Selector, NamespaceSelector: s.NamespaceSelector,
		InitContainers: s.InitContainers, Containers: s.Containers, Volumes: s.Volumes, UpdateStrategy: s.UpdateStrategy,
		InjectionStrategy: s.InjectionStrategy, ImagePullSecrets: s.ImagePullSecrets, RevisionHistoryLimit: s.RevisionHistoryLimit,
		PatchPodMetadata: s.PatchPodMetadata}
	if ns := selectedNamespace(s.NamespaceSelector); ns != "" {
		dst.Spec.Namespace, dst.Spec.NamespaceSelector = ns, nil
	}
	if s.CustomVersion != "" {
		if dst.Labels == nil {
			dst.Labels = map[string]string{}
		}
		dst.Labels[kruiseappsv1alpha1.SidecarSetCustomVersionLabel] = s.CustomVersion
	}
	dst.Status = in.Status
	return nil
}

// namespaceSelector selects the namespace named ns and no other.
func namespaceSelector(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
}

// selectedNamespace is the namespace a selector made by namespaceSelector names, "" for any other selector.
// (An empty value selects no namespace, where an empty namespace means every one.)
func selectedNamespace(sel *metav1.LabelSelector) string {
	if sel == nil || len(sel.MatchLabels) != 1 || len(sel.MatchExpressions) != 0 {
		return ""
	}
	return sel.MatchLabels[corev1.LabelMetadataName]
}
