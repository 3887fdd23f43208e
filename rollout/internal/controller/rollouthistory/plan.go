package rollouthistory

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// stage is where the release a Rollout reports stands, as far as its history is concerned.
type stage int

const (
	// stageNone: nothing to record (no rollout-id, not releasing, deleting, ...).
	stageNone stage = iota
	// stageRunning: a release is progressing; its history should exist.
	stageRunning
	// stageCompleted: the release finished; its history can be completed.
	stageCompleted
)

// release is the release a Rollout's status describes.
type release struct {
	ID    string
	Stage stage
}

// releaseOf reads the release from the Rollout's status. The rollout-id and the Rollout's name become label
// values of the history, so a release whose id or name cannot be one is not recorded.
func releaseOf(ro *rolloutsv1beta1.Rollout) release {
	sub := ro.Status.GetSubStatus()
	if sub == nil || sub.ObservedRolloutID == "" || !ro.DeletionTimestamp.IsZero() {
		return release{}
	}
	if !validLabelValue(sub.ObservedRolloutID) || !validLabelValue(ro.Name) {
		return release{}
	}
	rel := release{ID: sub.ObservedRolloutID}
	switch {
	case ro.Status.Phase == rolloutsv1beta1.RolloutPhaseProgressing:
		rel.Stage = stageRunning
	case ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy && sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted:
		rel.Stage = stageCompleted
	}
	return rel
}

func validLabelValue(v string) bool {
	return len(validation.IsValidLabelValue(v)) == 0
}

// action is what one reconcile does to the history of a release.
type action int

const (
	actNone action = iota
	actCreate
	actComplete
)

// decide picks the action for a release and its history (nil when none exists). A completed history is
// never touched again; a finished release without a history stays unrecorded, as upstream does.
func decide(rel release, h *rolloutsv1alpha1.RolloutHistory) action {
	switch {
	case rel.Stage == stageRunning && h == nil:
		return actCreate
	case rel.Stage == stageCompleted && h != nil && h.Status.Phase != rolloutsv1alpha1.RolloutHistoryPhaseCompleted:
		return actComplete
	default:
		return actNone
	}
}

// historyLabels select the history of one release of one Rollout.
func historyLabels(rollout, id string) map[string]string {
	return map[string]string{rolloutsv1beta1.RolloutIDLabel: id, rolloutsv1beta1.RolloutNameLabel: rollout}
}

// pickHistory returns the history owned by the Rollout with the given UID among items, the oldest when
// several exist; a history left by a deleted Rollout of the same name is not this Rollout's.
func pickHistory(items []rolloutsv1alpha1.RolloutHistory, owner types.UID) *rolloutsv1alpha1.RolloutHistory {
	var out *rolloutsv1alpha1.RolloutHistory
	for i := range items {
		h := &items[i]
		if ref := metav1.GetControllerOfNoCopy(h); ref == nil || ref.UID != owner {
			continue
		}
		if out == nil || older(h, out) {
			out = h
		}
	}
	return out
}

func older(a, b *rolloutsv1alpha1.RolloutHistory) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// maxNameLength is the longest object name the apiserver accepts.
const maxNameLength = validation.DNS1123SubdomainMaxLength

// historyName is "<rollout>-<suffix>", the Rollout's name shortened when the result would be too long.
func historyName(rollout, suffix string) string {
	if keep := maxNameLength - len(suffix) - 1; len(rollout) > keep {
		rollout = strings.TrimRight(rollout[:max(keep, 0)], "-.")
	}
	return rollout + "-" + suffix
}

// workloadRolloutID is the workload's rollout-id: its label, then its annotation.
func workloadRolloutID(obj metav1.Object) string {
	if id := obj.GetLabels()[rolloutsv1beta1.RolloutIDLabel]; id != "" {
		return id
	}
	return obj.GetAnnotations()[rolloutsv1beta1.RolloutIDLabel]
}

// snapshots are the objects of a release, read when its history is created.
type snapshots struct {
	Workload  *unstructured.Unstructured
	Service   *unstructured.Unstructured
	Ingress   *unstructured.Unstructured
	HTTPRoute *unstructured.Unstructured
}

// routeNames are the names of the traffic objects of a Rollout's first traffic routing ("" when none).
type routeNames struct {
	Service, Ingress, HTTPRoute string
}

func routeNamesOf(ro *rolloutsv1beta1.Rollout) routeNames {
	trs := ro.Spec.Strategy.GetTrafficRoutings()
	if len(trs) == 0 {
		return routeNames{}
	}
	out := routeNames{Service: trs[0].Service}
	if trs[0].Ingress != nil {
		out.Ingress = trs[0].Ingress.Name
	}
	if trs[0].Gateway != nil && trs[0].Gateway.HTTPRouteName != nil {
		out.HTTPRoute = *trs[0].Gateway.HTTPRouteName
	}
	return out
}

// newHistory is the history of release id of ro, named name, holding the snapshots. It fails when the
// workload does not carry the id: the Rollout's status describes an older or id-less release.
func newHistory(ro *rolloutsv1beta1.Rollout, id, name string, s snapshots) (*rolloutsv1alpha1.RolloutHistory, error) {
	if s.Workload == nil || workloadRolloutID(s.Workload) != id {
		return nil, errNotThisRelease
	}
	spec, err := historySpec(ro, id, s)
	if err != nil {
		return nil, err
	}
	return &rolloutsv1alpha1.RolloutHistory{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ro.Namespace, Labels: historyLabels(ro.Name, id),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ro, rolloutsv1beta1.GroupVersion.WithKind("Rollout"))},
		},
		Spec: spec,
	}, nil
}

// errNotThisRelease says the workload does not (yet) carry the release's rollout-id.
var errNotThisRelease = fmt.Errorf("workload does not carry the release's rollout-id")

func historySpec(ro *rolloutsv1beta1.Rollout, id string, s snapshots) (rolloutsv1alpha1.RolloutHistorySpec, error) {
	var spec rolloutsv1alpha1.RolloutHistorySpec
	data, err := rawJSON(ro.Spec)
	if err != nil {
		return spec, fmt.Errorf("rollout spec: %w", err)
	}
	spec.Rollout = rolloutsv1alpha1.RolloutInfo{RolloutID: id, NameAndSpecData: rolloutsv1alpha1.NameAndSpecData{Name: ro.Name, Data: data}}
	ref := ro.Spec.WorkloadRef
	spec.Workload.TypeMeta = metav1.TypeMeta{APIVersion: ref.APIVersion, Kind: ref.Kind}
	if spec.Workload.NameAndSpecData, err = specData(s.Workload); err != nil {
		return spec, err
	}
	return spec, addRoutes(&spec, s)
}

// addRoutes records the traffic objects that exist.
func addRoutes(spec *rolloutsv1alpha1.RolloutHistorySpec, s snapshots) error {
	var err error
	if s.Service != nil {
		if spec.Service.NameAndSpecData, err = specData(s.Service); err != nil {
			return err
		}
	}
	if s.Ingress != nil {
		spec.TrafficRouting.IngressRef = &rolloutsv1alpha1.IngressInfo{}
		if spec.TrafficRouting.IngressRef.NameAndSpecData, err = specData(s.Ingress); err != nil {
			return err
		}
	}
	if s.HTTPRoute != nil {
		spec.TrafficRouting.HTTPRouteRef = &rolloutsv1alpha1.HTTPRouteInfo{}
		if spec.TrafficRouting.HTTPRouteRef.NameAndSpecData, err = specData(s.HTTPRoute); err != nil {
			return err
		}
	}
	return nil
}

// specData is an object's name and the JSON of its spec (empty when it has none).
func specData(obj *unstructured.Unstructured) (rolloutsv1alpha1.NameAndSpecData, error) {
	out := rolloutsv1alpha1.NameAndSpecData{Name: obj.GetName()}
	spec, ok := obj.Object["spec"]
	if !ok {
		return out, nil
	}
	data, err := rawJSON(spec)
	if err != nil {
		return out, fmt.Errorf("spec of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	out.Data = data
	return out, nil
}

func rawJSON(v any) (runtime.RawExtension, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return runtime.RawExtension{}, err
	}
	return runtime.RawExtension{Raw: raw}, nil
}

// podSelector selects the pods of the workload that the release labelled. A workload without a readable
// selector matches nothing, so that pods of other workloads sharing the rollout-id are never recorded.
func podSelector(workload *unstructured.Unstructured, id string) (labels.Selector, error) {
	raw, ok, err := unstructured.NestedMap(workload.Object, "spec", "selector")
	if err != nil || !ok {
		return labels.Nothing(), nil
	}
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, ls); err != nil {
		return labels.Nothing(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || sel.Empty() {
		return labels.Nothing(), nil
	}
	req, err := labels.NewRequirement(rolloutsv1beta1.RolloutIDLabel, selection.Equals, []string{id})
	if err != nil {
		return nil, fmt.Errorf("rollout-id %q: %w", id, err)
	}
	return sel.Add(*req), nil
}

// completedStatus is the final status of a history: for every step (1-based) the pods labelled with its
// batch, sorted by name. Pods of other batches (or without one) are left out.
func completedStatus(steps int, pods []corev1.Pod) rolloutsv1alpha1.RolloutHistoryStatus {
	st := rolloutsv1alpha1.RolloutHistoryStatus{Phase: rolloutsv1alpha1.RolloutHistoryPhaseCompleted}
	byBatch := podsByBatch(pods)
	for i := 1; i <= steps; i++ {
		st.CanarySteps = append(st.CanarySteps, rolloutsv1alpha1.CanaryStepInfo{CanaryStepIndex: int32(i), Pods: byBatch[i]})
	}
	return st
}

func podsByBatch(pods []corev1.Pod) map[int][]rolloutsv1alpha1.Pod {
	sorted := append([]corev1.Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	out := map[int][]rolloutsv1alpha1.Pod{}
	for i := range sorted {
		p := &sorted[i]
		batch, err := strconv.Atoi(p.Labels[rolloutsv1beta1.RolloutBatchIDLabel])
		if err != nil || !p.DeletionTimestamp.IsZero() {
			continue
		}
		out[batch] = append(out[batch], rolloutsv1alpha1.Pod{Name: p.Name, IP: p.Status.PodIP, NodeName: p.Spec.NodeName})
	}
	return out
}
