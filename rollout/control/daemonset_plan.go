package control

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/revision"
)

// controllerRevisionHashLabel is the hash label of the history helper's ControllerRevisions (StatefulSet);
// the DaemonSet controller labels its revisions controller-revision-hash, like its pods.
const controllerRevisionHashLabel = "controller.kubernetes.io/hash"

// DaemonSetAdvancedControl is the JSON value of the DaemonSetAdvancedControlAnnotation: the control writes
// it each batch, and the native DaemonSet controller deletes old pods until the DaemonSet runs
// desiredNumberScheduled - Partition pods of BatchRevision.
type DaemonSetAdvancedControl struct {
	// Partition is the number of pods to keep on old revisions, as a decimal string.
	Partition string `json:"partition"`
	// BatchRevision is the controller-revision-hash of the pods the batch asks for.
	BatchRevision string `json:"batch-revision"`
}

// ParseDaemonSetAdvancedControl decodes the annotation value and its partition.
func ParseDaemonSetAdvancedControl(raw string) (DaemonSetAdvancedControl, int32, error) {
	var a DaemonSetAdvancedControl
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return a, 0, fmt.Errorf("annotation %s: %w", rolloutsv1beta1.DaemonSetAdvancedControlAnnotation, err)
	}
	n, err := strconv.ParseInt(a.Partition, 10, 32)
	if err != nil || n < 0 {
		return a, 0, fmt.Errorf("annotation %s: partition %q is not a non-negative integer",
			rolloutsv1beta1.DaemonSetAdvancedControlAnnotation, a.Partition)
	}
	return a, int32(n), nil
}

// daemonSetRevisions is the JSON value of the DaemonSetRevisionAnnotation.
type daemonSetRevisions struct {
	Canary string `json:"canary-revision"`
	Stable string `json:"stable-revision"`
}

// DaemonSetUpdateRevision is the hash of the newest ControllerRevision that ds controls ("" when there is
// none), and whether that revision records ds's current template. The ControllerRevisions reach a cache
// through their own informer: a status that observed the latest generation does not prove that the revision
// of that generation is there yet, and the newest one seen may still be the old template's.
func DaemonSetUpdateRevision(ds *appsv1.DaemonSet, revisions []appsv1.ControllerRevision) (string, bool) {
	newest := newestOwnedRevision(ds, revisions)
	if newest == nil {
		return "", false
	}
	return daemonSetRevisionHash(ds, newest), recordsDaemonSetTemplate(newest, ds)
}

func newestOwnedRevision(owner metav1.Object, revisions []appsv1.ControllerRevision) *appsv1.ControllerRevision {
	var newest *appsv1.ControllerRevision
	for i := range revisions {
		cr := &revisions[i]
		if controlledByUID(cr.OwnerReferences, owner) && (newest == nil || cr.Revision > newest.Revision) {
			newest = cr
		}
	}
	return newest
}

// daemonSetRevisionHash is the revision's hash label, else its name after the DaemonSet's.
func daemonSetRevisionHash(ds *appsv1.DaemonSet, cr *appsv1.ControllerRevision) string {
	for _, key := range []string{rolloutsv1beta1.ControllerRevisionHashLabelKey, controllerRevisionHashLabel} {
		if hash := cr.Labels[key]; hash != "" {
			return hash
		}
	}
	return strings.TrimPrefix(cr.Name, ds.Name+"-")
}

// recordsTemplate reports whether the revision's data ({"spec":{"template":...}}, as the DaemonSet controller
// writes it) is the template t.
func recordsTemplate(cr *appsv1.ControllerRevision, t *corev1.PodTemplateSpec) bool {
	recorded, err := revision.TemplateOf(cr)
	return err == nil && equality.Semantic.DeepEqual(*recorded, *t)
}

// daemonSetPods keeps the pods ds (a native or an Advanced DaemonSet) controls.
func daemonSetPods(ds metav1.Object, pods []corev1.Pod) []corev1.Pod {
	var own []corev1.Pod
	for _, p := range pods {
		if controlledByUID(p.OwnerReferences, ds) {
			own = append(own, p)
		}
	}
	return own
}

// daemonSetInfo builds the WorkloadInfo from what observe saw.
func daemonSetInfo(o dsObservation, t Target) *WorkloadInfo {
	ds, pods, update := o.ds, o.pods, o.update
	updated := podsOfRevision(pods, rolloutsv1beta1.ControllerRevisionHashLabelKey, update)
	sel, err := workloadSelector(ds.Spec.Selector)
	if err != nil {
		sel = labels.Nothing()
	}
	return &WorkloadInfo{
		Object:               ds,
		Replicas:             ds.Status.DesiredNumberScheduled,
		UpdatedReplicas:      int32(len(updated)), //nolint:gosec // pods on nodes fit
		UpdatedReadyReplicas: countReady(updated),
		StableRevision:       daemonSetStableRevision(ds, pods, update),
		UpdateRevision:       update,
		RevisionLabelKey:     rolloutsv1beta1.ControllerRevisionHashLabelKey,
		UpdatedPods:          revisionSelector(sel, rolloutsv1beta1.ControllerRevisionHashLabelKey, update),
		Consistent:           o.consistent(),
		Controlled:           ControlledBy(ds.Annotations, t.Owner),
	}
}

func podsOfRevision(pods []corev1.Pod, key, revision string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if revision != "" && p.Labels[key] == revision {
			out = append(out, p)
		}
	}
	return out
}

// daemonSetStableRevision is the revision the batch annotation recorded for this update revision, else the
// most common revision among the old pods (so it stays put while they are replaced), else update.
func daemonSetStableRevision(ds *appsv1.DaemonSet, pods []corev1.Pod, update string) string {
	var revs daemonSetRevisions
	if err := json.Unmarshal([]byte(ds.Annotations[rolloutsv1beta1.DaemonSetRevisionAnnotation]), &revs); err == nil &&
		revs.Canary == update && revs.Stable != "" {
		return revs.Stable
	}
	return commonOldRevision(pods, update)
}

// commonOldRevision is the most common revision among the pods not on update (ties go to the first name), so
// that it stays put while the old pods are replaced; update when every pod runs it.
func commonOldRevision(pods []corev1.Pod, update string) string {
	counts := map[string]int{}
	for _, p := range pods {
		if rev := p.Labels[rolloutsv1beta1.ControllerRevisionHashLabelKey]; rev != "" && rev != update {
			counts[rev]++
		}
	}
	best := update
	for _, rev := range slices.Sorted(maps.Keys(counts)) {
		if best == update || counts[rev] > counts[best] {
			best = rev
		}
	}
	return best
}

// daemonSetInitPatch takes control, remembers the update strategy type and switches it to OnDelete so only
// the batch deletions replace pods.
func daemonSetInitPatch(ds *appsv1.DaemonSet, t Target) map[string]any {
	patch := map[string]any{}
	if !ControlledBy(ds.Annotations, t.Owner) {
		setNested(patch, ControlInfo(t.Owner), "metadata", "annotations", rolloutsv1beta1.BatchReleaseControlAnnotation)
	}
	if _, ok := ds.Annotations[rolloutsv1beta1.DaemonSetOriginalUpdateStrategyAnnotation]; !ok {
		setNested(patch, string(daemonSetStrategyType(ds.Spec.UpdateStrategy.Type)),
			"metadata", "annotations", rolloutsv1beta1.DaemonSetOriginalUpdateStrategyAnnotation)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		setNested(patch, string(appsv1.OnDeleteDaemonSetStrategyType), "spec", "updateStrategy", "type")
	}
	return patch
}

// daemonSetStrategyType maps anything but OnDelete to RollingUpdate, the API default.
func daemonSetStrategyType(t appsv1.DaemonSetUpdateStrategyType) appsv1.DaemonSetUpdateStrategyType {
	if t == appsv1.OnDeleteDaemonSetStrategyType {
		return t
	}
	return appsv1.RollingUpdateDaemonSetStrategyType
}

// daemonSetBatchPatch asks for desiredUpdated pods of update. Within one update revision the partition only
// decreases; a new revision starts over.
func daemonSetBatchPatch(ds *appsv1.DaemonSet, stable, update string, desiredUpdated int32) map[string]any {
	if update == "" {
		return nil
	}
	total := max(ds.Status.DesiredNumberScheduled, 0)
	partition := total - upTo(desiredUpdated, total)
	old, oldPartition, err := ParseDaemonSetAdvancedControl(ds.Annotations[rolloutsv1beta1.DaemonSetAdvancedControlAnnotation])
	if err == nil && old.BatchRevision == update {
		partition = min(partition, oldPartition)
	}
	control := mustJSON(DaemonSetAdvancedControl{Partition: strconv.Itoa(int(partition)), BatchRevision: update})
	revisions := mustJSON(daemonSetRevisions{Canary: update, Stable: stable})
	patch := map[string]any{}
	setAnnotationIfChanged(patch, ds.Annotations, rolloutsv1beta1.DaemonSetAdvancedControlAnnotation, control)
	setAnnotationIfChanged(patch, ds.Annotations, rolloutsv1beta1.DaemonSetRevisionAnnotation, revisions)
	return patch
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v) //nolint:errchkjson // plain string structs always marshal
	return string(b)
}

func setAnnotationIfChanged(patch map[string]any, annotations map[string]string, key, value string) {
	if cur, ok := annotations[key]; !ok || cur != value {
		setNested(patch, value, "metadata", "annotations", key)
	}
}

// daemonSetFinalizePatch restores the saved update strategy type and drops the release's annotations. A
// cancelled release kept frozen stays OnDelete, with the saved type kept for the next release.
func daemonSetFinalizePatch(ds *appsv1.DaemonSet, t Target) map[string]any {
	if controlledByOther(ds.Annotations, t.Owner) {
		return nil
	}
	patch := map[string]any{}
	for _, key := range []string{
		rolloutsv1beta1.BatchReleaseControlAnnotation,
		rolloutsv1beta1.DaemonSetAdvancedControlAnnotation,
		rolloutsv1beta1.DaemonSetRevisionAnnotation,
	} {
		if _, ok := ds.Annotations[key]; ok {
			setNested(patch, nil, "metadata", "annotations", key)
		}
	}
	original, ok := ds.Annotations[rolloutsv1beta1.DaemonSetOriginalUpdateStrategyAnnotation]
	if !ok || keepsFrozen(t) {
		return patch
	}
	setNested(patch, nil, "metadata", "annotations", rolloutsv1beta1.DaemonSetOriginalUpdateStrategyAnnotation)
	if restored := daemonSetStrategyType(appsv1.DaemonSetUpdateStrategyType(original)); restored != ds.Spec.UpdateStrategy.Type {
		setNested(patch, string(restored), "spec", "updateStrategy", "type")
	}
	return patch
}

// daemonSetResumed reports whether a released DaemonSet runs its current template on every node; an OnDelete
// DaemonSet never rolls by itself, so there is nothing to wait for.
func daemonSetResumed(ds *appsv1.DaemonSet) bool {
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return true
	}
	s := ds.Status
	return s.ObservedGeneration >= ds.Generation &&
		s.UpdatedNumberScheduled >= s.DesiredNumberScheduled && s.NumberAvailable >= s.DesiredNumberScheduled
}
