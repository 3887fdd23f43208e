package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var owner = metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "db", UID: "uid-1"}

func TestGenerated(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        *kruiseappsv1alpha1.PersistentPodStateSpec
		action      Action
	}{
		{name: "no annotation", annotations: nil, action: Delete},
		{name: "not true", annotations: map[string]string{kruiseappsv1alpha1.AnnotationAutoGeneratePersistentPodState: "false",
			kruiseappsv1alpha1.AnnotationRequiredPersistentTopology: zone}, action: Delete},
		{name: "true without topology waits", annotations: map[string]string{kruiseappsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
			kruiseappsv1alpha1.AnnotationPersistentPodAnnotations: podIP}, action: Leave},
		{name: "every annotation", action: Apply, annotations: map[string]string{
			kruiseappsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
			kruiseappsv1alpha1.AnnotationRequiredPersistentTopology:     zone,
			kruiseappsv1alpha1.AnnotationPreferredPersistentTopology:    hostname + ", rack",
			kruiseappsv1alpha1.AnnotationPersistentPodAnnotations:       podIP + ",,",
		}, want: &kruiseappsv1alpha1.PersistentPodStateSpec{
			TargetReference:            kruiseappsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "db"},
			RequiredPersistentTopology: &kruiseappsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone}},
			PreferredPersistentTopology: []kruiseappsv1alpha1.PreferredTopologyTerm{
				{Weight: 100, Preference: kruiseappsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{hostname, "rack"}}}},
			PersistentPodAnnotations: []kruiseappsv1alpha1.PersistentPodAnnotation{{Key: podIP}},
		}},
		{name: "preferred only", action: Apply, annotations: map[string]string{
			kruiseappsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
			kruiseappsv1alpha1.AnnotationPreferredPersistentTopology:    hostname,
		}, want: &kruiseappsv1alpha1.PersistentPodStateSpec{
			TargetReference: kruiseappsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "db"},
			PreferredPersistentTopology: []kruiseappsv1alpha1.PreferredTopologyTerm{
				{Weight: 100, Preference: kruiseappsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{hostname}}}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, action := Generated(owner, "ns", tc.annotations)
			if action != tc.action {
				t.Fatalf("action %v, want %v", action, tc.action)
			}
			if tc.want == nil {
				if got != nil {
					t.Errorf("generated %+v", got)
				}
				return
			}
			if got.Name != "db" || got.Namespace != "ns" {
				t.Errorf("named %s/%s", got.Namespace, got.Name)
			}
			wantOwner := owner
			wantOwner.Controller = ptr.To(true)
			if diff := cmp.Diff([]metav1.OwnerReference{wantOwner}, got.OwnerReferences); diff != "" {
				t.Errorf("owners (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(*tc.want, got.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}
