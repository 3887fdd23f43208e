package nodeimagemanager_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/nodeimagemanager"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// cfg is nil when the tests run with -short: no control plane, pure tests only.
var cfg *rest.Config

const itTimeout = 30 * time.Second

// No kubelet runs: the tests write the nodes' Ready condition themselves.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &cfg))
}

var names atomic.Int32

func name(prefix string) string { return fmt.Sprintf("%s-%d", prefix, names.Add(1)) }

func startController(t *testing.T) client.Client {
	t.Helper()
	managertest.RequireCluster(t, cfg)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
	managertest.Start(t, cfg, scheme, func(mgr ctrl.Manager) error {
		return (&nodeimagemanager.Reconciler{}).SetupWithManager(mgr)
	})
	return managertest.DirectClient(t, cfg, scheme)
}

func TestNodeImageFollowsItsNode(t *testing.T) {
	c := startController(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name("ni-node"), Labels: map[string]string{"zone": "a"}}}
	managertest.Create(t, c, node)
	t.Cleanup(func() { _ = c.Delete(context.Background(), node) })
	setReady(t, c, node, corev1.ConditionFalse)
	consistently(t, "no NodeImage for a node that is not ready", func() bool { return nodeImage(t, c, node.Name) == nil })

	setReady(t, c, node, corev1.ConditionTrue)
	eventually(t, "the NodeImage created", func() bool { return nodeImage(t, c, node.Name) != nil })
	ni := nodeImage(t, c, node.Name)
	if ni.Labels["zone"] != "a" || len(ni.OwnerReferences) != 0 || len(ni.Spec.Images) != 0 {
		t.Errorf("new NodeImage: labels %v, owners %v, spec %+v", ni.Labels, ni.OwnerReferences, ni.Spec)
	}

	managertest.Update(t, c, node, func(n *corev1.Node) { n.Labels["zone"] = "b" })
	eventually(t, "the node's new label copied", func() bool { return nodeImage(t, c, node.Name).Labels["zone"] == "b" })

	if err := c.Delete(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the NodeImage deleted with its node", func() bool { return nodeImage(t, c, node.Name) == nil })
}

func TestNodeImageWithoutNode(t *testing.T) {
	c := startController(t)
	fake := createNodeImage(t, c, name("fake"), map[string]string{kruiseappsv1alpha1.FakeNodeImageLabelKey: ""}, nil)
	orphan := createNodeImage(t, c, name("orphan"), nil, nil)
	eventually(t, "the NodeImage of no node deleted", func() bool { return nodeImage(t, c, orphan.Name) == nil })
	consistently(t, "the fake NodeImage kept", func() bool { return nodeImage(t, c, fake.Name) != nil })
}

func TestFinishedTagsExpire(t *testing.T) {
	c := startController(t)
	ni := createNodeImage(t, c, name("ttl"), map[string]string{kruiseappsv1alpha1.FakeNodeImageLabelKey: "true"},
		map[string]kruiseappsv1alpha1.ImageSpec{"example.com/web": {Tags: []kruiseappsv1alpha1.ImageTagSpec{
			{Tag: "1", PullPolicy: &kruiseappsv1alpha1.ImageTagPullPolicy{TTLSecondsAfterFinished: ptr.To[int32](1)}},
			{Tag: "2"},
		}}})
	now := metav1.Now()
	ni.Status = kruiseappsv1alpha1.NodeImageStatus{Desired: 2, Succeeded: 2, ImageStatuses: map[string]kruiseappsv1alpha1.ImageStatus{
		"example.com/web": {Tags: []kruiseappsv1alpha1.ImageTagStatus{
			{Tag: "1", Phase: kruiseappsv1alpha1.ImagePhaseSucceeded, CompletionTime: &now},
			{Tag: "2", Phase: kruiseappsv1alpha1.ImagePhaseSucceeded, CompletionTime: &now},
		}}}}
	if err := c.Status().Update(t.Context(), ni); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the expired tag dropped", func() bool {
		tags := nodeImage(t, c, ni.Name).Spec.Images["example.com/web"].Tags
		return len(tags) == 1 && tags[0].Tag == "2"
	})
}

func createNodeImage(t *testing.T, c client.Client, name string, labels map[string]string, images map[string]kruiseappsv1alpha1.ImageSpec) *kruiseappsv1alpha1.NodeImage {
	t.Helper()
	ni := &kruiseappsv1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: kruiseappsv1alpha1.NodeImageSpec{Images: images}}
	managertest.Create(t, c, ni)
	t.Cleanup(func() { _ = c.Delete(context.Background(), ni) })
	return ni
}

// setReady writes the node's Ready condition, changed a minute ago: past the creation delay.
func setReady(t *testing.T, c client.Client, node *corev1.Node, status corev1.ConditionStatus) {
	t.Helper()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status,
		LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute)), LastHeartbeatTime: metav1.Now()}}
	if err := c.Status().Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
}

func nodeImage(t *testing.T, c client.Client, name string) *kruiseappsv1alpha1.NodeImage {
	t.Helper()
	ni := &kruiseappsv1alpha1.NodeImage{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, ni); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return ni
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	managertest.Eventually(t, itTimeout, what, func(context.Context) (bool, error) { return cond(), nil })
}

// consistently checks that cond holds long enough for the controller to have acted.
func consistently(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if !cond() {
			t.Fatalf("expected %s to hold", what)
		}
	}
}

// References to ImagePullJobs that are gone (deleted, or replaced by a job of the same name) leave the tags;
// a tag left without owners goes, one with an owner left or written by hand stays.
func TestReferencesToGoneJobsArePruned(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "ni-owners")
	job := &kruiseappsv1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "live"},
		Spec: kruiseappsv1alpha1.ImagePullJobSpec{Image: "nginx:1"}}
	managertest.Create(t, c, job)
	ref := func(name string, uid types.UID) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImagePullJob", Namespace: ns, Name: name, UID: uid}
	}
	live, stale, gone := ref("live", job.UID), ref("live", "older-uid"), ref("gone", "gone-uid")
	ni := createNodeImage(t, c, name("owners"), map[string]string{kruiseappsv1alpha1.FakeNodeImageLabelKey: "true"},
		map[string]kruiseappsv1alpha1.ImageSpec{"nginx": {Tags: []kruiseappsv1alpha1.ImageTagSpec{
			{Tag: "shared", OwnerReferences: []corev1.ObjectReference{live, gone}},
			{Tag: "gone", OwnerReferences: []corev1.ObjectReference{gone, stale}},
			{Tag: "by-hand"},
		}}})
	tags := func() []kruiseappsv1alpha1.ImageTagSpec { return nodeImage(t, c, ni.Name).Spec.Images["nginx"].Tags }
	eventually(t, "the gone jobs' references pruned", func() bool {
		got := tags()
		return len(got) == 2 && got[0].Tag == "shared" && len(got[0].OwnerReferences) == 1 && got[0].OwnerReferences[0].UID == job.UID &&
			got[1].Tag == "by-hand"
	})
	if err := c.Delete(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted job's tag gone", func() bool { got := tags(); return len(got) == 1 && got[0].Tag == "by-hand" })
}
