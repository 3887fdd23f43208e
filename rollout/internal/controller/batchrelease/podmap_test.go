package batchrelease

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestReleasesOfPod(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := rolloutsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	controlledBy := func(kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: "u", Controller: ptr.To(true)}}
	}
	release := func(name, workload string, phase rolloutsv1beta1.RolloutPhase) *rolloutsv1beta1.BatchRelease {
		br := &rolloutsv1beta1.BatchRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: rolloutsv1beta1.BatchReleaseSpec{WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: workload}}}
		br.Status.Phase = phase
		return br
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-abc", OwnerReferences: controlledBy("Deployment", "web")}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&rolloutsv1beta1.BatchRelease{}, workloadRefIndex, workloadRefKey).WithObjects(rs,
		release("web", "web", rolloutsv1beta1.RolloutPhaseProgressing),
		release("web-done", "web", rolloutsv1beta1.RolloutPhaseCompleted),
		release("other", "api", rolloutsv1beta1.RolloutPhaseProgressing)).Build()
	r := &Reconciler{Client: c}
	pod := func(ns string, owners []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", OwnerReferences: owners}}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []reconcile.Request
	}{
		{"a ReplicaSet's pod wakes its Deployment's unfinished release", pod("ns", controlledBy("ReplicaSet", "web-abc")),
			[]reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "web"}}}},
		{"a pod without a controller", pod("ns", nil), nil},
		{"a pod whose ReplicaSet is unknown", pod("ns", controlledBy("ReplicaSet", "gone")), nil},
		{"a pod in a namespace without releases", pod("elsewhere", controlledBy("ReplicaSet", "web-abc")), nil},
		{"a pod of another kind of workload of the same name", pod("ns", controlledBy("StatefulSet", "web")), nil},
	}
	for _, tt := range tests {
		var got []reconcile.Request
		for _, br := range r.podReleases(context.Background(), tt.pod) {
			got = append(got, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(br)})
		}
		if len(got) != len(tt.want) || (len(got) == 1 && got[0] != tt.want[0]) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPodConcerns(t *testing.T) {
	now := metav1.Now()
	br := &rolloutsv1beta1.BatchRelease{}
	br.Status.UpdateRevision = "new"
	pod := func(hashKey, hash string, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{hashKey: hash}}}
		if deleting {
			p.DeletionTimestamp = &now
		}
		return p
	}
	tests := []struct {
		name string
		br   *rolloutsv1beta1.BatchRelease
		pod  *corev1.Pod
		want bool
	}{
		{"an old pod going away", br, pod("pod-template-hash", "old", true), false},
		{"an old pod changing otherwise", br, pod("pod-template-hash", "old", false), true},
		{"a new pod going away", br, pod("pod-template-hash", "new", true), true},
		{"a new StatefulSet pod going away", br, pod("controller-revision-hash", "new", true), true},
		{"any pod before the release knows its revision", &rolloutsv1beta1.BatchRelease{}, pod("pod-template-hash", "old", true), true},
	}
	for _, tt := range tests {
		if got := podConcerns(tt.br, tt.pod); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
