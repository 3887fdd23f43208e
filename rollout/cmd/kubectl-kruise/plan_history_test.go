package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// templateWithImage is testTemplate with the web container at image.
func templateWithImage(image string) corev1.PodTemplateSpec {
	t := testTemplate()
	t.Spec.Containers[0].Image = image
	return t
}

// controllerRevision records a template the way the controllers do.
func controllerRevision(t *testing.T, name string, number int64, owner types.UID, tmpl corev1.PodTemplateSpec, cause string) unstructured.Unstructured {
	t.Helper()
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
	if err != nil {
		t.Fatal(err)
	}
	raw["$patch"] = "replace"
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": raw}})
	if err != nil {
		t.Fatal(err)
	}
	cr := &appsv1.ControllerRevision{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ControllerRevision"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps", Annotations: map[string]string{}},
		Data:       runtime.RawExtension{Raw: data},
		Revision:   number,
	}
	if cause != "" {
		cr.Annotations[changeCauseAnnotation] = cause
	}
	if owner != "" {
		cr.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: owner, Controller: ptr.To(true)}}
	}
	return *toUnstructured(t, cr)
}

func replicaSet(t *testing.T, name string, number string, tmpl corev1.PodTemplateSpec, annotations map[string]string) unstructured.Unstructured {
	tmpl.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: name}
	rs := &appsv1.ReplicaSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps", Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Selector: testSelector, Template: tmpl},
	}
	if number != "" {
		rs.Annotations[deploymentRevisionAnnotation] = number
	}
	return *toUnstructured(t, rs)
}

// cloneSetHistory: revisions 1 (nginx:0), 3 (nginx:1, the current template) and 2 (nginx:2), listed out
// of order, plus one revision of another owner and one without owner.
func cloneSetHistory(t *testing.T) []revision {
	items := []unstructured.Unstructured{
		controllerRevision(t, "web-c", 3, "uid-web", templateWithImage("nginx:1"), "set image nginx:1"),
		controllerRevision(t, "web-a", 1, "uid-web", templateWithImage("nginx:0"), ""),
		controllerRevision(t, "web-b", 2, "uid-web", templateWithImage("nginx:2"), ""),
		controllerRevision(t, "other-a", 9, "uid-other", templateWithImage("x"), ""),
		controllerRevision(t, "orphan", 8, "", templateWithImage("x"), ""),
	}
	revs, err := revisionsFromControllerRevisions(items, "uid-web")
	if err != nil {
		t.Fatal(err)
	}
	return revs
}

func TestRevisionsFromControllerRevisions(t *testing.T) {
	revs := cloneSetHistory(t)
	var names []string
	for _, r := range revs {
		names = append(names, r.Name)
		if _, ok := r.Template["$patch"]; ok {
			t.Errorf("%s: $patch kept in the template", r.Name)
		}
	}
	if !cmp.Equal(names, []string{"web-a", "web-b", "web-c"}) {
		t.Errorf("revisions = %v", names)
	}
	want := "REVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n3         set image nginx:1\n"
	if got := historyTable(revs); got != want {
		t.Errorf("table =\n%s\nwant\n%s", got, want)
	}
	if got := historyTable(nil); got != "No rollout history found.\n" {
		t.Errorf("empty table = %q", got)
	}
}

func TestRevisionsFromReplicaSets(t *testing.T) {
	items := []unstructured.Unstructured{
		replicaSet(t, "web-2", "2", templateWithImage("nginx:2"), map[string]string{changeCauseAnnotation: "two"}),
		replicaSet(t, "web-1", "1", templateWithImage("nginx:1"), map[string]string{}),
		replicaSet(t, "web-x", "", templateWithImage("nginx:x"), map[string]string{}),
	}
	revs, err := revisionsFromReplicaSets(items, "uid-web")
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 2 || revs[0].Name != "web-1" || revs[1].ChangeCause != "two" {
		t.Fatalf("revisions = %+v", revs)
	}
	labels, _, _ := unstructured.NestedStringMap(revs[0].Template, "metadata", "labels")
	if !cmp.Equal(labels, map[string]string{"app": "web"}) {
		t.Errorf("labels = %v, want the pod-template-hash label removed", labels)
	}
}

func TestPickRevision(t *testing.T) {
	revs := cloneSetHistory(t)
	tests := []struct {
		to      int64
		want    string
		wantErr string
	}{
		{to: 0, want: "web-b"},
		{to: 1, want: "web-a"},
		{to: 7, wantErr: "unable to find specified revision 7 in history"},
		{to: -1, wantErr: "unable to find specified revision -1 in history"},
	}
	for _, tt := range tests {
		got, err := pickRevision(revs, tt.to)
		if (err != nil && err.Error() != tt.wantErr) || (err == nil && got.Name != tt.want) {
			t.Errorf("to %d: got %s, %v", tt.to, got.Name, err)
		}
	}
	if _, err := pickRevision(revs[:1], 0); err == nil || err.Error() != "no last revision to roll back to" {
		t.Errorf("single revision: %v", err)
	}
}

func TestPlanUndo(t *testing.T) {
	current := testCloneSet(t, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Template = templateWithImage("nginx:1") })
	t.Run("previous revision", func(t *testing.T) {
		p, err := planUndo(kindCloneSet, current, cloneSetHistory(t), 0)
		if err != nil {
			t.Fatal(err)
		}
		var ops []map[string]any
		if err := json.Unmarshal(p.Edit.Patch, &ops); err != nil || p.Edit.Type != types.JSONPatchType {
			t.Fatalf("patch %s: %v", p.Edit.Patch, err)
		}
		if len(ops) != 2 || ops[0]["path"] != "/metadata/resourceVersion" || ops[0]["value"] != "7" || ops[1]["path"] != "/spec/template" {
			t.Errorf("ops = %v", ops)
		}
		if got := containersOf(t, p.Edit.Preview).Containers[0].Image; got != "nginx:2" || p.Result != "rolled back" {
			t.Errorf("preview image %s, result %q", got, p.Result)
		}
	})
	t.Run("already at the revision", func(t *testing.T) {
		p, err := planUndo(kindCloneSet, current, cloneSetHistory(t), 3)
		if err != nil || p.Edit.Patch != nil || p.Result != "skipped rollback (current template already matches revision 3)" {
			t.Errorf("plan %+v, %v", p, err)
		}
	})
	t.Run("paused deployment", func(t *testing.T) {
		d := testDeployment(t, func(d *appsv1.Deployment) { d.Spec.Paused = true })
		_, err := planUndo(kindDeployment, d, cloneSetHistory(t), 1)
		if err == nil || !strings.HasPrefix(err.Error(), "you cannot rollback a paused deployment") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("deployment paused by a Rollout", func(t *testing.T) {
		d := testDeployment(t, func(d *appsv1.Deployment) {
			d.Spec.Paused = true
			d.Annotations = map[string]string{rolloutsv1beta1.InProgressingAnnotation: `{"rolloutName":"demo"}`, "note": "x",
				deploymentRevisionAnnotation: "5"}
		})
		items := []unstructured.Unstructured{replicaSet(t, "web-1", "1", templateWithImage("nginx:0"), map[string]string{"from-rs": "y"})}
		revs, _ := revisionsFromReplicaSets(items, "uid-web")
		p, err := planUndo(kindDeployment, d, revs, 1)
		if err != nil {
			t.Fatal(err)
		}
		// The Rollout's mark and the Deployment's revision stay, the rest comes from the ReplicaSet.
		want := map[string]string{rolloutsv1beta1.InProgressingAnnotation: `{"rolloutName":"demo"}`, "from-rs": "y", deploymentRevisionAnnotation: "5"}
		if diff := cmp.Diff(want, p.Edit.Preview.GetAnnotations()); diff != "" {
			t.Errorf("annotations (-want +got):\n%s", diff)
		}
		if !strings.Contains(string(p.Edit.Patch), `"path":"/metadata/annotations"`) {
			t.Errorf("patch = %s", p.Edit.Patch)
		}
	})
}
