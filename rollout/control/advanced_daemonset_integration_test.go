package control_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// TestAdvancedDaemonSetRelease releases an Advanced DaemonSet over two nodes the way an engine-only manager
// does beside upstream OpenKruise, whose DaemonSet controller the test plays: it reports the nodes and the
// revision in status and runs the pods. The partition freezes at desiredNumberScheduled, only ever goes
// down, and is gone with the pause and control-info once the release completes and every node is updated.
func TestAdvancedDaemonSetRelease(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	t.Parallel()
	c := managertest.DirectClient(t, clusterConfig, managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme))
	ns := managertest.Namespace(t, c, "control-it")
	ds := &kruiseappsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: kruiseappsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: podTemplate("agent", "registry.example/agent:v2"),
			UpdateStrategy: kruiseappsv1alpha1.DaemonSetUpdateStrategy{Type: kruiseappsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &kruiseappsv1alpha1.RollingUpdateDaemonSet{Partition: ptr.To(intstr.FromInt32(32767)), Paused: ptr.To(true)}},
		},
	}
	if err := c.Create(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	runPod(t, c, ds, "v1", 0)
	runPod(t, c, ds, "v1", 1)
	reportStatus(t, c, ds, kruiseappsv1alpha1.DaemonSetStatus{DesiredNumberScheduled: 2, NumberAvailable: 2, DaemonSetHash: "v2"})

	plan := rolloutsv1beta1.ReleasePlan{FinalizingPolicy: rolloutsv1beta1.WaitResumeFinalizingPolicyType}
	ctl := control.NewAdvancedDaemonSet(c, releaseTarget(ns, "apps.kruise.io/v1alpha1", "DaemonSet", "agent", plan))
	if err := ctl.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	expectRollingUpdate(t, c, ds, "2")
	reportStatus(t, c, ds, kruiseappsv1alpha1.DaemonSetStatus{DesiredNumberScheduled: 2, NumberAvailable: 2, DaemonSetHash: "v2"})
	info := readUntil(t, ctl, "both old pods ready", func(i *control.WorkloadInfo) bool { return countReadyPods(t, c, ns) == 2 })
	if !info.Controlled || !info.Consistent || info.Replicas != 2 || info.UpdateRevision != "v2" || info.StableRevision != "v1" ||
		info.RevisionLabelKey != "controller-revision-hash" || !info.PodsRecreated {
		t.Fatalf("frozen DaemonSet read as %+v", info)
	}

	upgradeBatch(t, ctl, 1)
	expectRollingUpdate(t, c, ds, "1")
	if err := ctl.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	upgradeBatch(t, ctl, 0)
	expectRollingUpdate(t, c, ds, "1")

	// The DaemonSet's controller replaces the pod of one node.
	mustDelete(t, c, fmt.Sprintf("agent-v1-%d", 0), ns)
	runPod(t, c, ds, "v2", 0)
	reportStatus(t, c, ds, kruiseappsv1alpha1.DaemonSetStatus{DesiredNumberScheduled: 2, UpdatedNumberScheduled: 1, NumberAvailable: 2, DaemonSetHash: "v2"})
	readUntil(t, ctl, "one updated ready pod", func(i *control.WorkloadInfo) bool {
		return i.UpdatedReplicas == 1 && i.UpdatedReadyReplicas == 1 && i.StableRevision == "v1"
	})

	upgradeBatch(t, ctl, 2)
	expectRollingUpdate(t, c, ds, "0")
	if done, err := ctl.Finalize(t.Context()); err != nil || done {
		t.Fatalf("Finalize with a node still old = %v, %v; want not done", done, err)
	}
	mustGet(t, c, ds)
	// A partition of 0 holds nothing back and is left as it is.
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if (ru.Partition != nil && ru.Partition.IntValue() != 0) || ds.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation] != "" {
		t.Fatalf("after Finalize partition=%v annotations=%v", ru.Partition, ds.Annotations)
	}
	reportStatus(t, c, ds, kruiseappsv1alpha1.DaemonSetStatus{DesiredNumberScheduled: 2, UpdatedNumberScheduled: 2, NumberAvailable: 2, DaemonSetHash: "v2"})
	finalizeUntilDone(t, ctl)
}

// runPod creates the pod the DaemonSet's controller runs on kwok node i for revision: kwok makes it Ready.
func runPod(t *testing.T, c client.Client, ds *kruiseappsv1alpha1.DaemonSet, revision string, i int) {
	t.Helper()
	tmpl := ds.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("agent-%s-%d", revision, i), Namespace: ds.Namespace,
			Labels:          map[string]string{"app": "agent", "controller-revision-hash": revision},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, kruiseappsv1alpha1.GroupVersion.WithKind("DaemonSet"))},
		},
		Spec: tmpl.Spec,
	}
	pod.Spec.NodeName = fmt.Sprintf("%s%d", cluster.NodeNamePrefix, i)
	if err := c.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

func mustDelete(t *testing.T, c client.Client, name, ns string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := c.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}

// reportStatus writes the status the DaemonSet's controller would, as of the DaemonSet's generation.
func reportStatus(t *testing.T, c client.Client, ds *kruiseappsv1alpha1.DaemonSet, st kruiseappsv1alpha1.DaemonSetStatus) {
	t.Helper()
	mustGet(t, c, ds)
	st.CurrentNumberScheduled, st.NumberReady, st.ObservedGeneration = st.DesiredNumberScheduled, st.NumberAvailable, ds.Generation
	ds.Status = st
	if err := c.Status().Update(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
}

// expectRollingUpdate checks the partition of a DaemonSet the release has unpaused.
func expectRollingUpdate(t *testing.T, c client.Client, ds *kruiseappsv1alpha1.DaemonSet, partition string) {
	t.Helper()
	mustGet(t, c, ds)
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.Partition == nil || ru.Partition.String() != partition || ptr.Deref(ru.Paused, false) {
		t.Fatalf("rollingUpdate = %+v, want partition %s, not paused", ru, partition)
	}
}

func countReadyPods(t *testing.T, c client.Client, ns string) int {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				n++
			}
		}
	}
	return n
}
