package imagejob_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// The ImagePullJob a CloneSet's image pre-download creates (workloads/cloneset/internal/plan preDownloadJob:
// owned by the CloneSet, no webhook defaults, a podSelector of the old revision's pods, parallelism and policies
// from its annotations) is picked up: only the nodes of the pods not yet updated pull, and it completes.
func TestCloneSetPreDownloadJobIsPickedUp(t *testing.T) {
	e := start(t)
	nodes := e.nodes(3)
	cs := &kruiseappsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"},
		Spec: kruiseappsv1alpha1.CloneSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}}},
		}}
	managertest.Create(t, e.c, cs)
	// Old pods on the first two nodes, an updated one on the third; a pod of another app beside them.
	e.pod("old-0", nodes[0], map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "web-old"})
	e.pod("old-1", nodes[1], map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "web-old"})
	e.pod("new-0", nodes[2], map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "web-new"})
	e.pod("other", nodes[2], map[string]string{"app": "other"})

	job := &kruiseappsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web-new-main", Labels: map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "new"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet"))}},
		Spec: kruiseappsv1alpha1.ImagePullJobSpec{Image: "nginx:2", ImagePullJobTemplate: kruiseappsv1alpha1.ImagePullJobTemplate{
			PodSelector: &kruiseappsv1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{
				MatchLabels: map[string]string{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: appsv1.ControllerRevisionHashLabelKey,
					Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web-new", "new"}}}}},
			Parallelism: ptr.To(intstr.FromInt32(2)),
			PullPolicy:  &kruiseappsv1alpha1.PullPolicy{BackoffLimit: ptr.To[int32](1), TimeoutSeconds: ptr.To[int32](300)},
			CompletionPolicy: kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Always,
				TTLSecondsAfterFinished: ptr.To[int32](600)},
		}},
	}
	managertest.Create(t, e.c, job)
	e.waitJob(job, "the old pods' nodes pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Desired == 2 && s.Active == 2 })
	if got := e.ownedBy(job, "nginx", "2", nodes); len(got) != 2 || got[0] != nodes[0] || got[1] != nodes[1] {
		t.Fatalf("nodes pulling %v, want those of the old pods %v", got, nodes[:2])
	}
	e.report(nodes[0], "nginx", "2", succeeded, "")
	e.report(nodes[1], "nginx", "2", succeeded, "")
	job = e.waitJob(job, "completed", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.CompletionTime != nil })
	if s := job.Status; s.Succeeded != 2 || s.Failed != 0 {
		t.Errorf("status %+v", s)
	}
}

// pod creates a pod bound to node (no kubelet runs it: bound is what a podSelector reads).
func (e *env) pod(name, node string, labels map[string]string) {
	e.t.Helper()
	managertest.Create(e.t, e.c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}}})
}
