package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// A canary Deployment's events reach the Rollout whose BatchRelease controls it; a workload no release controls
// maps to no Rollout this way.
func TestRolloutOfRelease(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := rolloutsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	controller := func(kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: kind, Name: name, UID: "u",
			Controller: ptr.To(true)}}
	}
	br := &rolloutsv1beta1.BatchRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-release",
		OwnerReferences: controller("Rollout", "web")}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(br).Build()}
	canary := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-canary",
		OwnerReferences: controller("BatchRelease", "web-release")}}
	got := r.rolloutOfRelease(t.Context(), canary)
	if len(got) != 1 || got[0].NamespacedName != (client.ObjectKey{Namespace: "ns", Name: "web"}) {
		t.Errorf("canary Deployment maps to %v, want ns/web", got)
	}
	for name, obj := range map[string]*appsv1.Deployment{
		"no owner":             {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}},
		"a release gone":       {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x", OwnerReferences: controller("BatchRelease", "gone")}},
		"another kind's owner": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "y", OwnerReferences: controller("Rollout", "web")}},
	} {
		if got := r.rolloutOfRelease(t.Context(), obj); len(got) != 0 {
			t.Errorf("%s: maps to %v, want none", name, got)
		}
	}
}
