package predownload

import (
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

func TestPlan(t *testing.T) {
	oldT := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "db:1"}, {Name: "side", Image: "side:1"}}}}
	newT := oldT.DeepCopy()
	newT.Spec.Containers[0].Image = "db:2"
	recreate := newT.DeepCopy()
	recreate.Spec.Containers[0].Args = []string{"--new"}
	older := oldT.DeepCopy()
	older.Spec.Containers[1].Image = "side:0"
	update := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "db-abc", Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "abc"}}}
	workload := func(change func(*Workload), annotations map[string]string) Workload {
		set := &kruiseappsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "set-uid", Annotations: annotations}}
		w := Workload{Owner: set, Kind: kruiseappsv1beta1.GroupVersion.WithKind("StatefulSet"),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: newT, Replicas: 10}
		if change != nil {
			change(&w)
		}
		return w
	}
	anyChange := func(w *Workload) { w.AnyChange = true }
	cases := []struct {
		name          string
		w             Workload
		olds          []*corev1.PodTemplateSpec
		newT          *corev1.PodTemplateSpec
		ignored, wait bool
		images        map[string]string
	}{
		{name: "skipped by the strategy", w: workload(func(w *Workload) { w.Skip = true }, nil), olds: []*corev1.PodTemplateSpec{oldT}, newT: newT, ignored: true},
		{name: "a change made in place", w: workload(nil, nil), olds: []*corev1.PodTemplateSpec{oldT}, newT: newT, images: map[string]string{"main": "db:2"}},
		{name: "a change that recreates pods", w: workload(nil, nil), olds: []*corev1.PodTemplateSpec{oldT}, newT: recreate, ignored: true},
		{name: "an unknown template", w: workload(nil, nil), olds: []*corev1.PodTemplateSpec{nil}, newT: newT, ignored: true},
		{name: "in place from two templates", w: workload(nil, nil), olds: []*corev1.PodTemplateSpec{oldT, older}, newT: newT, ignored: true},
		{name: "any change: one that recreates pods", w: workload(anyChange, nil), olds: []*corev1.PodTemplateSpec{oldT}, newT: recreate,
			images: map[string]string{"main": "db:2"}},
		{name: "any change: the images some old template lacks", w: workload(anyChange, nil), olds: []*corev1.PodTemplateSpec{oldT, older, nil},
			newT: newT, images: map[string]string{"main": "db:2", "side": "side:1"}},
		{name: "any change: no image changed", w: workload(anyChange, nil), olds: []*corev1.PodTemplateSpec{newT}, newT: newT, ignored: true},
		{name: "fewer updated ready pods than the annotation's 25% of 10, rounded up",
			w:    workload(func(w *Workload) { w.UpdatedReady = 2 }, map[string]string{kruiseappsv1alpha1.ImagePreDownloadMinUpdatedReadyPods: "25%"}),
			olds: []*corev1.PodTemplateSpec{oldT}, newT: newT, wait: true},
		{name: "enough updated ready pods",
			w:    workload(func(w *Workload) { w.UpdatedReady = 3 }, map[string]string{kruiseappsv1alpha1.ImagePreDownloadMinUpdatedReadyPods: "25%"}),
			olds: []*corev1.PodTemplateSpec{oldT}, newT: newT, images: map[string]string{"main": "db:2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Plan(tc.w, update, tc.olds, tc.newT)
			images := map[string]string{}
			for _, j := range d.Jobs {
				images[j.Name[len("db-abc-"):]] = j.Spec.Image
			}
			if d.Ignored != tc.ignored || d.Wait != tc.wait || (!tc.ignored && !tc.wait && !maps.Equal(images, tc.images)) {
				t.Fatalf("decision %+v (images %v), want ignored %v, wait %v, else images %v", d, images, tc.ignored, tc.wait, tc.images)
			}
		})
	}
}

// testJob is the job of container main to image db:2 for a set of the given template.
func testJob(tmpl *corev1.PodTemplateSpec) (Workload, *kruiseappsv1alpha1.ImagePullJob) {
	set := &kruiseappsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "set-uid",
		Annotations: map[string]string{kruiseappsv1alpha1.ImagePreDownloadParallelismKey: "3"}}}
	w := Workload{Owner: set, Kind: kruiseappsv1beta1.GroupVersion.WithKind("StatefulSet"),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: tmpl, Replicas: 10}
	update := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "db-abc", Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "abc"}}}
	return w, job(w, update, "main", "db:2")
}

// The job is named after the revision and container, owned by the workload, labelled as its template and with
// the revision's hash, and selects the workload's pods not on the update revision.
func TestJobMetadata(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db", "tier": "data"}}}
	w, j := testJob(tmpl)
	owner := metav1.GetControllerOf(j)
	sel := j.Spec.PodSelector
	switch {
	case j.Name != "db-abc-main" || j.Namespace != "ns" || j.Spec.Image != "db:2":
		t.Errorf("job %s/%s of %s", j.Namespace, j.Name, j.Spec.Image)
	case owner == nil || owner.Kind != "StatefulSet" || owner.UID != "set-uid":
		t.Errorf("controller %+v", owner)
	case j.Labels["tier"] != "data" || j.Labels[appsv1.ControllerRevisionHashLabelKey] != "abc" || tmpl.Labels[appsv1.ControllerRevisionHashLabelKey] != "":
		t.Errorf("labels %v (the template's: %v)", j.Labels, tmpl.Labels)
	case sel.MatchLabels["app"] != "db" || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpNotIn ||
		len(sel.MatchExpressions[0].Values) != 2 || len(w.Selector.MatchExpressions) != 0:
		t.Errorf("pod selector %+v (the workload's: %+v)", sel, w.Selector)
	}
}

// The job pulls with the workload's parallelism annotation, upstream's timeout, retry and TTL, and the template's
// pull secrets.
func TestJobSpec(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}}
	_, j := testJob(tmpl)
	if j.Spec.Parallelism.IntValue() != 3 || *j.Spec.PullPolicy.TimeoutSeconds != defaultTimeout || *j.Spec.PullPolicy.BackoffLimit != 1 ||
		*j.Spec.CompletionPolicy.TTLSecondsAfterFinished != jobTTLAfterDone || len(j.Spec.PullSecrets) != 1 || j.Spec.PullSecrets[0] != "regcred" {
		t.Errorf("spec %+v", j.Spec)
	}
}
