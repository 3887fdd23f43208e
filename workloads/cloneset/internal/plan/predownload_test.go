package plan

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	nodeadmission "github.com/flotilla-dev/flotilla/nodeagent/admission"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/predownload"
)

// PlanPreDownload is the pre-download decision for an in-place update of cs from the current template oldT to
// the update revision's newT, as the controller's Syncer makes it.
func PlanPreDownload(cs *kruiseappsv1alpha1.CloneSet, update *appsv1.ControllerRevision, oldT, newT *corev1.PodTemplateSpec) predownload.Decision {
	return predownload.Plan(PreDownloadWorkload(cs), update, []*corev1.PodTemplateSpec{oldT}, newT)
}

func TestPlanPreDownload(t *testing.T) {
	oldT := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "web:1"}, {Name: "side", Image: "side:1"}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}}
	newT := oldT.DeepCopy()
	newT.Spec.Containers[0].Image = "web:2"
	envT := newT.DeepCopy()
	envT.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	update := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "abc"}}}
	base := func(mutate ...func(*kruiseappsv1alpha1.CloneSet)) *kruiseappsv1alpha1.CloneSet {
		cs := cloneSet(10, func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.UpdateStrategy.Type = kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
			s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
			s.Template = *newT
		})
		cs.Name, cs.Namespace = "web", "ns"
		for _, m := range mutate {
			m(cs)
		}
		return cs
	}
	cases := []struct {
		name    string
		cs      *kruiseappsv1alpha1.CloneSet
		newT    *corev1.PodTemplateSpec
		ignored bool
		wait    bool
	}{
		{name: "recreate is ignored", cs: base(func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType
		}), newT: newT, ignored: true},
		{name: "3 replicas are ignored", cs: base(func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](3) }), newT: newT, ignored: true},
		{name: "one batch is ignored", cs: base(func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
		}), newT: newT, ignored: true},
		{name: "not in place is ignored", cs: base(), newT: envT, ignored: true},
		{name: "waits for updated ready pods", cs: base(func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Annotations = map[string]string{kruiseappsv1alpha1.ImagePreDownloadMinUpdatedReadyPods: "20%"}
			cs.Status.UpdatedReadyReplicas = 1
		}), newT: newT, wait: true},
		{name: "one job per changed image", cs: base(func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Annotations = map[string]string{kruiseappsv1alpha1.ImagePreDownloadParallelismKey: "5",
				kruiseappsv1alpha1.ImagePreDownloadMinUpdatedReadyPods: "2"}
			cs.Status.UpdatedReadyReplicas = 2
		}), newT: newT},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := PlanPreDownload(tc.cs, update, oldT, tc.newT)
			if d.Ignored != tc.ignored || d.Wait != tc.wait {
				t.Fatalf("decision = %+v, want ignored %v wait %v", d, tc.ignored, tc.wait)
			}
			if tc.ignored || tc.wait {
				return
			}
			if len(d.Jobs) != 1 {
				t.Fatalf("%d jobs, want 1", len(d.Jobs))
			}
			j := d.Jobs[0]
			sel := j.Spec.PodSelector.MatchExpressions
			if j.Name != "web-abc-main" || j.Spec.Image != "web:2" || j.Labels[appsv1.ControllerRevisionHashLabelKey] != "abc" ||
				j.Spec.Parallelism.IntValue() != 5 || *j.Spec.PullPolicy.TimeoutSeconds != 300 || *j.Spec.PullPolicy.BackoffLimit != 1 ||
				*j.Spec.CompletionPolicy.TTLSecondsAfterFinished != 600 || j.Spec.PullSecrets[0] != "regcred" ||
				len(sel) != 1 || sel[0].Operator != metav1.LabelSelectorOpNotIn || metav1.GetControllerOf(j).Name != "web" {
				t.Fatalf("job = %+v", j)
			}
			checkAdmitted(t, j)
		})
	}
}

// checkAdmitted: the job passes the ImagePullJob webhook as the CloneSet creates it, and with its defaults.
func checkAdmitted(t *testing.T, j *kruiseappsv1alpha1.ImagePullJob) {
	t.Helper()
	if errs := nodeadmission.ValidateImagePullJob(j, nil); len(errs) > 0 {
		t.Errorf("the ImagePullJob webhook refuses the job: %v", errs)
	}
	nodeadmission.DefaultImagePullJob(j, nil)
	if errs := nodeadmission.ValidateImagePullJob(j, nil); len(errs) > 0 {
		t.Errorf("the ImagePullJob webhook refuses the defaulted job: %v", errs)
	}
}

// apps.kruise.io/image-predownload-timeout-seconds becomes the job's pullPolicy.timeoutSeconds. Upstream takes
// any whole number; a value that is not one keeps the default 300 s, and so does one below 1 here, which the
// ImagePullJob webhook would refuse (timeoutSeconds below 1) and so no job would pull at all.
func TestPreDownloadTimeoutAnnotation(t *testing.T) {
	oldT := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "web:1"}}}}
	newT := oldT.DeepCopy()
	newT.Spec.Containers[0].Image = "web:2"
	update := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "abc"}}}
	for _, tc := range []struct {
		name, value string
		unset       bool
		want        int32
	}{
		{name: "unset: upstream's default", unset: true, want: 300},
		{name: "a whole number of seconds", value: "120", want: 120},
		{name: "one second", value: "1", want: 1},
		{name: "not a number", value: "2m", want: 300},
		{name: "a fraction", value: "1.5", want: 300},
		{name: "empty", value: "", want: 300},
		{name: "zero", value: "0", want: 300},
		{name: "negative", value: "-30", want: 300},
		{name: "beyond int32", value: "4294967296", want: 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := cloneSet(10, func(s *kruiseappsv1alpha1.CloneSetSpec) {
				s.UpdateStrategy.Type = kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
				s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
				s.Template = *newT
			})
			cs.Name, cs.Namespace = "web", "ns"
			if !tc.unset {
				cs.Annotations = map[string]string{kruiseappsv1alpha1.ImagePreDownloadTimeoutSecondsKey: tc.value}
			}
			d := PlanPreDownload(cs, update, oldT, newT)
			if len(d.Jobs) != 1 {
				t.Fatalf("decision %+v, want one job", d)
			}
			j := d.Jobs[0]
			if got := ptr.Deref(j.Spec.PullPolicy.TimeoutSeconds, -1); got != tc.want {
				t.Errorf("pullPolicy.timeoutSeconds = %d, want %d", got, tc.want)
			}
			if got := ptr.Deref(j.Spec.PullPolicy.BackoffLimit, -1); got != 1 {
				t.Errorf("pullPolicy.backoffLimit = %d, want upstream's 1 whatever the timeout", got)
			}
			checkAdmitted(t, j)
		})
	}
}
