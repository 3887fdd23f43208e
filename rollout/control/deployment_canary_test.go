package control

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func stableDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "ns", UID: "web-uid", Generation: 4,
			Labels:      map[string]string{"team": "a", rolloutsv1beta1.WorkloadTypeLabel: "deployment"},
			Annotations: map[string]string{"note": "x", stsAnn: ControlInfo(testOwner)},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](4),
			Paused:   true,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "web:v2"}}},
			},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 4},
	}
}

func TestNewCanaryDeployment(t *testing.T) {
	plan := rolloutsv1beta1.ReleasePlan{PatchPodTemplateMetadata: &rolloutsv1beta1.PatchPodTemplateMetadata{
		Labels: map[string]string{"version": "canary"}, Annotations: map[string]string{"a": "b"},
	}}
	got := newCanaryDeployment(stableDeployment(), Target{Owner: testOwner, Plan: plan})
	want := stableDeployment().Spec
	want.Replicas, want.Paused = ptr.To[int32](0), false
	want.Template.Labels = map[string]string{"app": "web", "version": "canary"}
	want.Template.Annotations = map[string]string{"a": "b"}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	wantMeta := metav1.ObjectMeta{
		GenerateName: "web-", Namespace: "ns",
		Labels:          map[string]string{"team": "a", rolloutsv1beta1.CanaryDeploymentLabel: "web"},
		Annotations:     map[string]string{stsAnn: ControlInfo(testOwner)},
		OwnerReferences: []metav1.OwnerReference{testOwner},
		Finalizers:      []string{rolloutsv1beta1.CanaryDeploymentFinalizer},
	}
	if diff := cmp.Diff(wantMeta, got.ObjectMeta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
}

func TestMatchingCanary(t *testing.T) {
	want := canaryTemplate(stableDeployment(), nil)
	canary := func(name string, image string, created int, deleting bool) appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
			Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(created), 0)),
		}}
		d.Spec.Template = *want.DeepCopy()
		d.Spec.Template.Labels["pod-template-hash"] = "ignored"
		d.Spec.Template.Spec.Containers[0].Image = image
		if deleting {
			d.DeletionTimestamp = ptr.To(metav1.Now())
		}
		return d
	}
	tests := []struct {
		name     string
		canaries []appsv1.Deployment
		want     string
	}{
		{"none", nil, ""},
		{"a canary of an earlier template does not count", []appsv1.Deployment{canary("web-a", "web:v1", 1, false)}, ""},
		{"the oldest match", []appsv1.Deployment{
			canary("web-c", "web:v2", 3, false), canary("web-b", "web:v2", 2, false), canary("web-a", "web:v1", 1, false),
		}, "web-b"},
		{"a deleted one is skipped", []appsv1.Deployment{canary("web-a", "web:v2", 1, true), canary("web-b", "web:v2", 2, false)}, "web-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := matchingCanary(tt.canaries, want)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want {
				t.Errorf("matchingCanary = %q, want %q", name, tt.want)
			}
		})
	}
}

func TestCanaryScalePatch(t *testing.T) {
	tests := []struct {
		current *int32
		desired int32
		abort   bool
		want    map[string]any
	}{
		{ptr.To[int32](0), 1, false, map[string]any{"spec": map[string]any{"replicas": int64(1)}}},
		{ptr.To[int32](1), 3, false, map[string]any{"spec": map[string]any{"replicas": int64(3)}}},
		{ptr.To[int32](3), 1, false, nil},
		{ptr.To[int32](3), 3, false, nil},
		{nil, 2, false, map[string]any{"spec": map[string]any{"replicas": int64(2)}}},
		{ptr.To[int32](3), 0, true, map[string]any{"spec": map[string]any{"replicas": int64(0)}}},
		{ptr.To[int32](0), 0, true, nil},
	}
	for _, tt := range tests {
		d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: tt.current}}
		if diff := cmp.Diff(tt.want, canaryScalePatch(d, tt.desired, tt.abort)); diff != "" {
			t.Errorf("scale %v to %d (-want +got):\n%s", tt.current, tt.desired, diff)
		}
	}
}

func TestStableFinalizePatch(t *testing.T) {
	resume := map[string]any{"metadata": map[string]any{"annotations": map[string]any{stsAnn: nil}}, "spec": map[string]any{"paused": false}}
	other := stableDeployment()
	other.Annotations[stsAnn] = `{"name":"other","uid":"other"}`
	tests := []struct {
		name   string
		stable *appsv1.Deployment
		plan   rolloutsv1beta1.ReleasePlan
		want   map[string]any
	}{
		{"complete", stableDeployment(), rolloutsv1beta1.ReleasePlan{}, resume},
		{"stopped at a batch stays paused", stableDeployment(), rolloutsv1beta1.ReleasePlan{BatchPartition: ptr.To[int32](1)},
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{stsAnn: nil}}}},
		{"another release's", other, rolloutsv1beta1.ReleasePlan{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, stableFinalizePatch(tt.stable, Target{Owner: testOwner, Plan: tt.plan})); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeploymentStableRevision(t *testing.T) {
	stable := stableDeployment()
	rs := func(hash, image string, replicas int32, revision string, owner rsOwner) appsv1.ReplicaSet {
		r := appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
			Labels:          map[string]string{"pod-template-hash": hash},
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": revision},
			OwnerReferences: []metav1.OwnerReference{{UID: owner.uid, Controller: ptr.To(true)}},
		}}
		r.Spec.Replicas = ptr.To(replicas)
		r.Spec.Template = *stable.Spec.Template.DeepCopy()
		r.Spec.Template.Spec.Containers[0].Image = image
		return r
	}
	mine, theirs := rsOwner{uid: "web-uid"}, rsOwner{uid: "canary-uid"}
	tests := []struct {
		name string
		rss  []appsv1.ReplicaSet
		want string
	}{
		{"the old ReplicaSet running pods", []appsv1.ReplicaSet{
			rs("h0", "web:v0", 0, "1", mine), rs("h1", "web:v1", 4, "2", mine), rs("h2", "web:v2", 0, "3", mine),
		}, "h1"},
		{"only the current one left", []appsv1.ReplicaSet{rs("h2", "web:v2", 4, "3", mine)}, "h2"},
		{"a canary's ReplicaSet is not the stable's", []appsv1.ReplicaSet{rs("c1", "web:v1", 4, "1", theirs)}, "update"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deploymentStableRevision(stable, tt.rss, "update"); got != tt.want {
				t.Errorf("stable revision = %q, want %q", got, tt.want)
			}
		})
	}
	labelled := stableDeployment()
	labelled.Labels[rolloutsv1beta1.DeploymentStableRevisionLabel] = "fromlabel"
	if got := deploymentStableRevision(labelled, nil, "update"); got != "fromlabel" {
		t.Errorf("stable revision with the label = %q", got)
	}
}

type rsOwner struct{ uid types.UID }

func TestCanaryInfo(t *testing.T) {
	stable := stableDeployment()
	canary := newCanaryDeployment(stable, Target{Owner: testOwner})
	canary.UID, canary.Generation = "canary-uid", 1
	canary.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, AvailableReplicas: 1}
	canaryRS := appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
		Labels:          map[string]string{"pod-template-hash": "canaryhash"},
		OwnerReferences: []metav1.OwnerReference{{UID: "canary-uid", Controller: ptr.To(true)}},
	}}
	canaryRS.Spec.Template = canary.Spec.Template

	got := canaryInfo(stable, canary, []appsv1.ReplicaSet{canaryRS}, Target{Owner: testOwner})
	if got.UpdatedPods.String() != "app=web,pod-template-hash=canaryhash" {
		t.Errorf("UpdatedPods = %q", got.UpdatedPods)
	}
	update := ComputeHash(&stable.Spec.Template, nil)
	got.Object, got.UpdatedPods = nil, nil
	want := WorkloadInfo{Replicas: 4, UpdatedReplicas: 2, UpdatedReadyReplicas: 1, StableRevision: update, UpdateRevision: update,
		RevisionLabelKey: "pod-template-hash", Consistent: true, Controlled: true}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}

	before := canaryInfo(stable, nil, nil, Target{Owner: testOwner})
	if before.UpdatedReplicas != 0 || before.UpdatedPods.String() != "" || !before.Consistent {
		t.Errorf("info before the first batch = %+v", before)
	}
}
