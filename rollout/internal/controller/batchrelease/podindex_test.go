package batchrelease

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
)

// The indexed list returns exactly the pods the selector alone selects.
func TestUpdatedPodsThroughTheRevisionIndex(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pod := func(ns, name string, l map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&corev1.Pod{}, podRevisionIndex, podRevisions).WithObjects(
		pod("ns", "web-new", map[string]string{"app": "web", "pod-template-hash": "new"}),
		pod("ns", "web-old", map[string]string{"app": "web", "pod-template-hash": "old"}),
		pod("ns", "api-new", map[string]string{"app": "api", "pod-template-hash": "new"}),
		pod("ns", "sts-new", map[string]string{"app": "web", "controller-revision-hash": "web-new"}),
		pod("other", "web-new", map[string]string{"app": "web", "pod-template-hash": "new"}),
	).Build()
	tests := []struct {
		name     string
		selector string
		key      string
		indexed  bool
		want     []string
	}{
		{"a Deployment's update revision", "app=web,pod-template-hash=new", rolloutsv1beta1.PodTemplateHashLabelKey, true, []string{"web-new"}},
		{"a StatefulSet's update revision", "app=web,controller-revision-hash=web-new", rolloutsv1beta1.ControllerRevisionHashLabelKey, true, []string{"sts-new"}},
		{"a selector without the revision", "app=web", rolloutsv1beta1.PodTemplateHashLabelKey, false, []string{"sts-new", "web-new", "web-old"}},
		{"a revision key the index does not know", "app=web,pod-template-hash=new", "example.com/revision", false, []string{"web-new"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := labels.Parse(tt.selector)
			if err != nil {
				t.Fatal(err)
			}
			opts := updatedPodsOptions("ns", &control.WorkloadInfo{UpdatedPods: sel, RevisionLabelKey: tt.key})
			indexed := slices.ContainsFunc(opts, func(o client.ListOption) bool { _, ok := o.(client.MatchingFields); return ok })
			if indexed != tt.indexed {
				t.Errorf("indexed = %v, want %v", indexed, tt.indexed)
			}
			list := &corev1.PodList{}
			if err := c.List(context.Background(), list, opts...); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range list.Items {
				got = append(got, p.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("listed %v, want %v", got, tt.want)
			}
		})
	}
}
