package sidecarset

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	"github.com/flotilla-dev/flotilla/sidecarset/internal/history"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/revision"
)

// podInjector is the module's part of the pod webhook: it adds to a new pod the sidecars of the SidecarSets
// it matches. It reads SidecarSets, namespaces and revisions from the manager's cache.
type podInjector struct {
	reader    client.Reader
	namespace string // where the SidecarSets' revisions are
	clock     clock.PassiveClock
	// draw is a random number in [0, 1), for injectionStrategy.revision's Partial policy; nil is math/rand's.
	draw func() float64
}

// mutate runs on every pod creation, so it reads the SidecarSets and the namespace as the cache holds them,
// without copies: nothing here changes them (inject copies what it injects; its tests check the sets stay
// unchanged).
func (i *podInjector) mutate(ctx context.Context, pod *corev1.Pod) (bool, error) {
	list := &kruiseappsv1alpha1.SidecarSetList{}
	if err := i.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing SidecarSets: %w", err)
	}
	if len(list.Items) == 0 {
		return false, nil
	}
	ns := &corev1.Namespace{}
	if err := i.reader.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("reading namespace %s: %w", pod.Namespace, err)
	}
	selected, err := inject.Select(pointers(list.Items), pod, ns.Labels)
	if err != nil || len(selected) == 0 {
		return false, err
	}
	sources, err := i.sources(ctx, pod, selected)
	if err != nil {
		return false, err
	}
	changed, err := inject.Inject(pod, sources, metav1.NewTime(i.clock.Now()))
	if err != nil {
		return false, fmt.Errorf("injecting sidecars: %w", err)
	}
	logf.FromContext(ctx).V(1).Info("Injected sidecars", "pod", klog.KObj(pod), "sidecarSets", len(sources))
	return changed, nil
}

func pointers(items []kruiseappsv1alpha1.SidecarSet) []*kruiseappsv1alpha1.SidecarSet {
	out := make([]*kruiseappsv1alpha1.SidecarSet, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// sources resolves what each SidecarSet injects: its current sidecars, or the revision its
// injectionStrategy pins.
func (i *podInjector) sources(ctx context.Context, pod *corev1.Pod, sets []*kruiseappsv1alpha1.SidecarSet) ([]inject.Source, error) {
	out := make([]inject.Source, 0, len(sets))
	for _, set := range sets {
		src := inject.Source{Set: set, Revision: set.Status.LatestRevision}
		if pinned(set, pod, i.drawer()) {
			r, err := i.pinnedRevision(ctx, set)
			if err != nil {
				return nil, err
			}
			if src.Set, err = history.Restore(set, r); err != nil {
				return nil, err
			}
			src.Revision = r.Name
		}
		out = append(out, src)
	}
	return out, nil
}

func (i *podInjector) drawer() func() float64 {
	if i.draw != nil {
		return i.draw
	}
	return rand.Float64
}

// pinned tells whether the pod gets the revision injectionStrategy.revision names, as upstream decides: with
// policy Always, or while the update is paused, every pod; with Partial, the pods the update selector does
// not pick, and of the others (of all, without a selector) a random share given by a percentage partition.
func pinned(set *kruiseappsv1alpha1.SidecarSet, pod *corev1.Pod, draw func() float64) bool {
	rev := set.Spec.InjectionStrategy.Revision
	if rev == nil || (rev.RevisionName == nil && rev.CustomVersion == nil) {
		return false
	}
	update := set.Spec.UpdateStrategy
	if update.Paused || rev.Policy != kruiseappsv1alpha1.PartialSidecarSetInjectRevisionPolicy {
		return true
	}
	if update.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(update.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			return true
		}
	}
	return drawnByPartition(update.Partition, draw)
}

// drawnByPartition draws whether a pod keeps the pinned revision: with a percentage partition, that share of
// the pods; with a number or none, no pod, as upstream draws.
func drawnByPartition(partition *intstr.IntOrString, draw func() float64) bool {
	if partition == nil || partition.Type != intstr.String {
		return false
	}
	percent, err := strconv.ParseFloat(strings.TrimSuffix(partition.StrVal, "%"), 64)
	return err == nil && draw() <= percent/100
}

// pinnedRevision finds the revision injectionStrategy.revision names: by name, or the newest with the
// custom version.
func (i *podInjector) pinnedRevision(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet) (*appsv1.ControllerRevision, error) {
	rev := set.Spec.InjectionStrategy.Revision
	if rev.RevisionName != nil {
		r := &appsv1.ControllerRevision{}
		if err := i.reader.Get(ctx, client.ObjectKey{Namespace: i.namespace, Name: *rev.RevisionName}, r); err != nil {
			return nil, fmt.Errorf("SidecarSet %s: spec.injectionStrategy.revision.revisionName %s: %w", set.Name, *rev.RevisionName, err)
		}
		return r, nil
	}
	list := &appsv1.ControllerRevisionList{}
	if err := i.reader.List(ctx, list, client.InNamespace(i.namespace), client.MatchingLabelsSelector{Selector: history.Selector(set.Name)},
		client.MatchingLabels{kruiseappsv1alpha1.SidecarSetCustomVersionLabel: *rev.CustomVersion}); err != nil {
		return nil, fmt.Errorf("listing the revisions of SidecarSet %s: %w", set.Name, err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("SidecarSet %s: spec.injectionStrategy.revision.customVersion %s: no revision has it", set.Name, *rev.CustomVersion)
	}
	revs := make([]*appsv1.ControllerRevision, len(list.Items))
	for k := range list.Items {
		revs[k] = &list.Items[k]
	}
	revision.Sort(revs)
	return revs[len(revs)-1], nil
}
