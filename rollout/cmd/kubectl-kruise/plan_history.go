package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

const (
	changeCauseAnnotation        = "kubernetes.io/change-cause"
	deploymentRevisionAnnotation = "deployment.kubernetes.io/revision"
)

// revision is one entry of a workload's history.
type revision struct {
	Number      int64
	Name        string
	ChangeCause string
	// Template is the pod template as recorded, kept as raw JSON values so a rollback restores fields
	// this client does not know.
	Template map[string]any
	// Annotations are the ReplicaSet's, which a Deployment rollback restores.
	Annotations map[string]string
}

// controlledBy: obj has a controller owner reference to the object with uid.
func controlledBy(obj *unstructured.Unstructured, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}

// revisionsFromControllerRevisions reads the history kept in ControllerRevisions (data
// {"spec":{"template":{...,"$patch":"replace"}}}, numbered by .revision) of the owner with uid.
func revisionsFromControllerRevisions(items []unstructured.Unstructured, uid types.UID) ([]revision, error) {
	var out []revision
	for i := range items {
		cr := &items[i]
		if !controlledBy(cr, uid) {
			continue
		}
		number, _, err := unstructured.NestedInt64(cr.Object, "revision")
		if err != nil {
			return nil, fmt.Errorf("ControllerRevision %s: reading revision: %w", cr.GetName(), err)
		}
		tmpl, _, err := unstructured.NestedMap(cr.Object, "data", "spec", "template")
		if err != nil {
			return nil, fmt.Errorf("ControllerRevision %s: reading the template: %w", cr.GetName(), err)
		}
		delete(tmpl, "$patch")
		out = append(out, revision{Number: number, Name: cr.GetName(), ChangeCause: cr.GetAnnotations()[changeCauseAnnotation], Template: tmpl})
	}
	return sortRevisions(out), nil
}

// revisionsFromReplicaSets reads a Deployment's history: its ReplicaSets, numbered by their revision
// annotation, templates without the pod-template-hash label the controller adds.
func revisionsFromReplicaSets(items []unstructured.Unstructured, uid types.UID) ([]revision, error) {
	var out []revision
	for i := range items {
		rs := &items[i]
		number, err := strconv.ParseInt(rs.GetAnnotations()[deploymentRevisionAnnotation], 10, 64)
		if !controlledBy(rs, uid) || err != nil {
			continue
		}
		tmpl, _, err := unstructured.NestedMap(rs.Object, "spec", "template")
		if err != nil {
			return nil, fmt.Errorf("ReplicaSet %s: reading the template: %w", rs.GetName(), err)
		}
		unstructured.RemoveNestedField(tmpl, "metadata", "labels", appsv1.DefaultDeploymentUniqueLabelKey)
		out = append(out, revision{
			Number: number, Name: rs.GetName(), ChangeCause: rs.GetAnnotations()[changeCauseAnnotation],
			Template: tmpl, Annotations: rs.GetAnnotations(),
		})
	}
	return sortRevisions(out), nil
}

func sortRevisions(revs []revision) []revision {
	slices.SortFunc(revs, func(a, b revision) int { return cmp.Compare(a.Number, b.Number) })
	return revs
}

// historyTable is the overview `rollout history` prints, as kubectl does.
func historyTable(revs []revision) string {
	if len(revs) == 0 {
		return "No rollout history found.\n"
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "REVISION\tCHANGE-CAUSE")
	for _, r := range revs {
		cause := r.ChangeCause
		if cause == "" {
			cause = "<none>"
		}
		fmt.Fprintf(w, "%d\t%s\n", r.Number, cause)
	}
	_ = w.Flush() // a strings.Builder never fails a write
	return b.String()
}

func findRevision(revs []revision, number int64) (revision, bool) {
	i := slices.IndexFunc(revs, func(r revision) bool { return r.Number == number })
	if i < 0 {
		return revision{}, false
	}
	return revs[i], true
}

// pickRevision chooses what an undo restores: the given revision, or with 0 the one before the latest.
func pickRevision(revs []revision, to int64) (revision, error) {
	if to == 0 {
		if len(revs) <= 1 {
			return revision{}, fmt.Errorf("no last revision to roll back to")
		}
		return revs[len(revs)-2], nil
	}
	if r, ok := findRevision(revs, to); ok {
		return r, nil
	}
	return revision{}, fmt.Errorf("unable to find specified revision %d in history", to)
}

// undoPlan is what an undo does: the edit, and the words the result is printed with.
type undoPlan struct {
	Edit     edit
	Result   string
	Revision revision
}

// planUndo restores the template of a revision with a JSON patch that also writes back the
// resourceVersion read, so it fails with a conflict if the workload changed since. The whole template is
// replaced: fields added since are dropped, as a rollback should. A Deployment
// gets its ReplicaSet's annotations back too, as kubectl does.
func planUndo(k *workloadKind, obj *unstructured.Unstructured, revs []revision, to int64) (undoPlan, error) {
	rev, err := pickRevision(revs, to)
	if err != nil {
		return undoPlan{}, err
	}
	if err := checkUndoAllowed(k, obj); err != nil {
		return undoPlan{}, err
	}
	same, err := sameTemplate(obj, rev.Template)
	if err != nil || same {
		return undoPlan{Result: fmt.Sprintf("skipped rollback (current template already matches revision %d)", rev.Number), Revision: rev}, err
	}
	ops := []map[string]any{
		{"op": "replace", "path": "/metadata/resourceVersion", "value": obj.GetResourceVersion()},
		{"op": "replace", "path": "/spec/template", "value": rev.Template},
	}
	preview := obj.DeepCopy()
	if err := unstructured.SetNestedMap(preview.Object, runtime.DeepCopyJSON(rev.Template), "spec", "template"); err != nil {
		return undoPlan{}, fmt.Errorf("restoring the template: %w", err)
	}
	if k == kindDeployment {
		annotations := deploymentAnnotations(obj.GetAnnotations(), rev.Annotations)
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations", "value": annotations})
		preview.SetAnnotations(annotations)
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return undoPlan{}, fmt.Errorf("encoding the patch: %w", err)
	}
	return undoPlan{Edit: edit{Type: types.JSONPatchType, Patch: data, Preview: preview}, Result: "rolled back", Revision: rev}, nil
}

// checkUndoAllowed refuses, as kubectl does, to roll back a paused Deployment, unless a Rollout paused
// it in the middle of a release: then rolling back is how the release is cancelled.
func checkUndoAllowed(k *workloadKind, obj *unstructured.Unstructured) error {
	paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused")
	if k != kindDeployment || !paused || obj.GetAnnotations()[rolloutsv1beta1.InProgressingAnnotation] != "" {
		return nil
	}
	return fmt.Errorf("you cannot rollback a paused deployment; resume it first with 'kubectl-kruise rollout resume deployment/%s' and try again", obj.GetName())
}

// sameTemplate compares the workload's template with a recorded one, ignoring Deployment's hash label.
func sameTemplate(obj *unstructured.Unstructured, recorded map[string]any) (bool, error) {
	current, err := podTemplate(obj)
	if err != nil {
		return false, err
	}
	var old corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(recorded, &old); err != nil {
		return false, fmt.Errorf("decoding the recorded template: %w", err)
	}
	delete(current.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(old.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return apiequality.Semantic.DeepEqual(current, old), nil
}

// deploymentKeeps are the Deployment's own annotations a rollback keeps instead of the ReplicaSet's;
// keepsAnnotation adds those of a Rollout that controls the Deployment, which must outlive the rollback.
var deploymentKeeps = []string{
	corev1.LastAppliedConfigAnnotation, deploymentRevisionAnnotation, "deployment.kubernetes.io/revision-history",
	"deployment.kubernetes.io/desired-replicas", "deployment.kubernetes.io/max-replicas", "deprecated.deployment.rollback.to",
}

func keepsAnnotation(key string) bool {
	return slices.Contains(deploymentKeeps, key) || strings.Contains(key, "rollouts.kruise.io/")
}

func deploymentAnnotations(deployment, replicaSet map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range replicaSet {
		if !keepsAnnotation(k) {
			out[k] = v
		}
	}
	for k, v := range deployment {
		if keepsAnnotation(k) {
			out[k] = v
		}
	}
	return out
}
