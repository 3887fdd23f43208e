package plan

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// SelectNodes picks the NodeImages job pulls on, sorted by name, from all of them: those spec.selector names,
// or whose labels (the node's, copied) its label selector matches, or of the nodes running the pods its
// podSelector matches (podNodes); every one without a selector. NodeImages being deleted are left out. An
// unreadable label selector is an error (the validating webhook refuses it).
func SelectNodes(job *kruiseappsv1alpha1.ImagePullJob, all []*kruiseappsv1alpha1.NodeImage, podNodes map[string]bool) ([]*kruiseappsv1alpha1.NodeImage, error) {
	match, err := nodeMatcher(job.Spec.ImagePullJobTemplate, podNodes)
	if err != nil {
		return nil, err
	}
	var out []*kruiseappsv1alpha1.NodeImage
	for _, ni := range all {
		if ni.DeletionTimestamp == nil && match(ni) {
			out = append(out, ni)
		}
	}
	slices.SortFunc(out, func(a, b *kruiseappsv1alpha1.NodeImage) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func nodeMatcher(t kruiseappsv1alpha1.ImagePullJobTemplate, podNodes map[string]bool) (func(*kruiseappsv1alpha1.NodeImage) bool, error) {
	switch {
	case t.PodSelector != nil:
		return func(ni *kruiseappsv1alpha1.NodeImage) bool { return podNodes[ni.Name] }, nil
	case t.Selector == nil:
		return func(*kruiseappsv1alpha1.NodeImage) bool { return true }, nil
	case len(t.Selector.Names) > 0:
		return func(ni *kruiseappsv1alpha1.NodeImage) bool { return slices.Contains(t.Selector.Names, ni.Name) }, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&t.Selector.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	return func(ni *kruiseappsv1alpha1.NodeImage) bool { return sel.Matches(labels.Set(ni.Labels)) }, nil
}

// PodSelector is the selector of the pods whose nodes job pulls on; nil when it has no podSelector.
func PodSelector(job *kruiseappsv1alpha1.ImagePullJob) (labels.Selector, error) {
	if job.Spec.PodSelector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&job.Spec.PodSelector.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("spec.podSelector: %w", err)
	}
	return sel, nil
}
