package deletionprotection

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func pod(ns, name string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: corev1.PodStatus{Phase: phase}}
	if deleting {
		p.DeletionTimestamp = ptr.To(metav1.Now())
		p.Finalizers = []string{"example.com/hold"}
	}
	return p
}

func claim(ns, name string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
}

func TestAPICounterPodsAndClaims(t *testing.T) {
	objs := []client.Object{
		pod("ns-1", "running", corev1.PodRunning, false), pod("ns-1", "pending", corev1.PodPending, false),
		pod("ns-1", "done", corev1.PodSucceeded, false), pod("ns-1", "going", corev1.PodRunning, true),
		pod("ns-2", "other", corev1.PodRunning, false),
		claim("ns-1", "data", corev1.ClaimBound), claim("ns-1", "waiting", corev1.ClaimPending), claim("ns-2", "other", corev1.ClaimBound),
	}
	c := &APICounter{Reader: fake.NewClientBuilder().WithObjects(objs...).Build()}
	pods, err := c.ActivePods(context.Background(), "ns-1")
	if err != nil || pods != 2 {
		t.Errorf("active pods %d (%v), want 2", pods, err)
	}
	claims, err := c.BoundClaims(context.Background(), "ns-1")
	if err != nil || claims != 1 {
		t.Errorf("Bound claims %d (%v), want 1", claims, err)
	}
	if pods, err := c.ActivePods(context.Background(), "ns-3"); err != nil || pods != 0 {
		t.Errorf("active pods of an empty namespace %d (%v)", pods, err)
	}
}

// pagedResources serves the pages of a list in order of their continue tokens ("" first, then "1", "2", ...);
// the rest of metadata.ResourceInterface is not used.
type pagedResources struct {
	metadata.ResourceInterface
	pages []*metav1.PartialObjectMetadataList
}

func (p *pagedResources) Resource(schema.GroupVersionResource) metadata.Getter { return p }
func (p *pagedResources) Namespace(string) metadata.ResourceInterface          { return p }
func (p *pagedResources) List(_ context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	i := 0
	if opts.Continue != "" {
		i, _ = strconv.Atoi(opts.Continue)
	}
	return p.pages[i], nil
}

func page(next string, remaining *int64, deleting ...bool) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{Continue: next, RemainingItemCount: remaining}}
	for _, d := range deleting {
		obj := metav1.PartialObjectMetadata{}
		if d {
			obj.DeletionTimestamp = ptr.To(metav1.Now())
		}
		l.Items = append(l.Items, obj)
	}
	return l
}

func TestAPICounterCustomResources(t *testing.T) {
	tests := []struct {
		name  string
		pages []*metav1.PartialObjectMetadataList
		want  int
	}{
		{"none", []*metav1.PartialObjectMetadataList{page("", nil)}, 0},
		{"one live object and the estimate of the rest", []*metav1.PartialObjectMetadataList{page("1", ptr.To[int64](41), false)}, 42},
		{"objects being deleted are skipped", []*metav1.PartialObjectMetadataList{
			page("1", ptr.To[int64](9), true), page("2", ptr.To[int64](7), true, false)}, 8},
		{"only objects being deleted", []*metav1.PartialObjectMetadataList{page("1", ptr.To[int64](1), true), page("", nil, true)}, 0},
		{"no estimate", []*metav1.PartialObjectMetadataList{page("1", nil, false)}, 1},
	}
	for _, tc := range tests {
		c := &APICounter{Metadata: &pagedResources{pages: tc.pages}}
		got, err := c.CustomResources(context.Background(), widgetsGVR)
		if err != nil || got != tc.want {
			t.Errorf("%s: %d (%v), want %d", tc.name, got, err, tc.want)
		}
	}
}
