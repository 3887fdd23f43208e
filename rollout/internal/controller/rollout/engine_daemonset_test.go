package rollout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// upstreamDaemonSet plays the part of upstream OpenKruise's DaemonSet controller beside an engine-only
// manager, as much as the engine reads of it: it reports the Advanced DaemonSet's status for its current
// generation, counting the nodes and the updated pods the test runs.
type upstreamDaemonSet struct {
	mu      sync.Mutex
	hash    string
	updated int32
}

const adsNodes = 2

func (u *upstreamDaemonSet) set(hash string, updated int32) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.hash, u.updated = hash, updated
}

// run reports the status until ctx ends.
func (u *upstreamDaemonSet) run(ctx context.Context, c client.Client, ns string) {
	for ctx.Err() == nil {
		ds := &kruiseappsv1alpha1.DaemonSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "agent"}, ds); err == nil {
			u.mu.Lock()
			st := kruiseappsv1alpha1.DaemonSetStatus{DesiredNumberScheduled: adsNodes, CurrentNumberScheduled: adsNodes,
				NumberReady: adsNodes, NumberAvailable: adsNodes, UpdatedNumberScheduled: u.updated, DaemonSetHash: u.hash,
				ObservedGeneration: ds.Generation}
			u.mu.Unlock()
			if !equality.Semantic.DeepEqual(ds.Status, st) {
				ds.Status = st
				_ = c.Status().Update(ctx, ds)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runAgentPod starts the pod of revision on kwok node i, as the DaemonSet's controller would.
func runAgentPod(t *testing.T, c client.Client, ds *kruiseappsv1alpha1.DaemonSet, revision string, i int) {
	t.Helper()
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("agent-%d", i), Namespace: ds.Namespace}}
	if err := c.Delete(context.Background(), old, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	eventually(t, "old pod gone", func() (bool, string) {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(old), &corev1.Pod{})
		return client.IgnoreNotFound(err) == nil && err != nil, fmt.Sprint(err)
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: ds.Namespace,
			Labels:          map[string]string{"app": "agent", rolloutsv1beta1.ControllerRevisionHashLabelKey: revision},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, kruiseappsv1alpha1.GroupVersion.WithKind("DaemonSet"))}},
		Spec: corev1.PodSpec{NodeName: fmt.Sprintf("%s%d", cluster.NodeNamePrefix, i),
			Containers: []corev1.Container{{Name: "agent", Image: "example.com/agent:" + revision}}},
	}
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

func getADS(t *testing.T, c client.Client, ns string) *kruiseappsv1alpha1.DaemonSet {
	t.Helper()
	ds := &kruiseappsv1alpha1.DaemonSet{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "agent"}, ds); err != nil {
		t.Fatal(err)
	}
	return ds
}

func adsPartition(ds *kruiseappsv1alpha1.DaemonSet) string {
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return ru.Partition.String()
	}
	return "<none>"
}

// An Advanced DaemonSet under a Rollout was frozen by the workload webhook and then left frozen, with the
// Rollout Healthy and no BatchRelease: the engine read it as a StatefulSet-like workload without an update
// revision. Now the release runs: batch 1 lowers the partition to one node, the approval to none, and the
// completed release leaves the DaemonSet unfrozen.
func TestAdvancedDaemonSetRelease(t *testing.T) {
	c := startEngine(t)
	ns := namespace(t, c)
	ctx := context.Background()
	ds := &kruiseappsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: kruiseappsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "example.com/agent:v1"}}}},
			UpdateStrategy: kruiseappsv1alpha1.DaemonSetUpdateStrategy{Type: kruiseappsv1alpha1.RollingUpdateDaemonSetStrategyType},
		},
	}
	if err := c.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	upstream := &upstreamDaemonSet{hash: "v1", updated: adsNodes}
	runCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go upstream.run(runCtx, c, ns)
	for i := range adsNodes {
		runAgentPod(t, c, ds, "v1", i)
	}
	ro := canaryRollout(ns, "1", "100%")
	ro.Name = "agent"
	ro.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet", Name: "agent"}
	if err := c.Create(ctx, ro); err != nil {
		t.Fatal(err)
	}
	waitAgentRollout(t, c, ns, "Healthy", 0, rolloutsv1beta1.CanaryStepStateCompleted)

	By(t, "the template changes and the workload webhook freezes the DaemonSet")
	freeze := map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{rolloutsv1beta1.InProgressingAnnotation: `{"rolloutName":"agent"}`}},
		"spec": map[string]any{"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"partition": 32767}},
			"template": map[string]any{"spec": map[string]any{"containers": []map[string]any{{"name": "agent", "image": "example.com/agent:v2"}}}}},
	}
	patchMerge(t, c, getADS(t, c, ns), freeze)
	upstream.set("v2", 0)
	waitAgentRollout(t, c, ns, "Progressing", 1, rolloutsv1beta1.CanaryStepStateUpgrade)
	eventually(t, "batch 1 lowers the partition to one node", func() (bool, string) {
		got := getADS(t, c, ns)
		return adsPartition(got) == "1", "partition " + adsPartition(got)
	})

	runAgentPod(t, c, getADS(t, c, ns), "v2", 0)
	upstream.set("v2", 1)
	waitAgentRollout(t, c, ns, "Progressing", 1, rolloutsv1beta1.CanaryStepStatePaused)

	approveRollout(t, c, ns, "agent")
	eventually(t, "the approval lowers the partition to none", func() (bool, string) {
		got := getADS(t, c, ns)
		return adsPartition(got) == "0" || adsPartition(got) == "<none>", "partition " + adsPartition(got)
	})
	runAgentPod(t, c, getADS(t, c, ns), "v2", 1)
	upstream.set("v2", adsNodes)
	eventually(t, "release completed", func() (bool, string) {
		got := getRolloutNamed(t, c, ns, "agent")
		return got.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy && condition(got, rolloutsv1beta1.RolloutConditionSucceeded) == "True/Success", describe(got)
	})
	got := getADS(t, c, ns)
	for _, key := range []string{rolloutsv1beta1.InProgressingAnnotation, rolloutsv1beta1.BatchReleaseControlAnnotation} {
		if _, ok := got.Annotations[key]; ok {
			t.Errorf("annotation %s left on the DaemonSet", key)
		}
	}
	if p := got.Spec.UpdateStrategy.RollingUpdate.Partition; p != nil && p.IntValue() != 0 {
		t.Errorf("partition after the release = %s", p.String())
	}
	if l := got.Labels[rolloutsv1beta1.WorkloadTypeLabel]; l != "daemonset" {
		t.Errorf("workload-type label = %q, want daemonset", l)
	}
}

// By names the next stage of a test in its log.
func By(t *testing.T, what string) { t.Helper(); t.Log(what) }

func patchMerge(t *testing.T, c client.Client, obj client.Object, patch map[string]any) {
	t.Helper()
	raw, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", raw)); err != nil {
		t.Fatal(err)
	}
}

func getRolloutNamed(t *testing.T, c client.Client, ns, name string) *rolloutsv1beta1.Rollout {
	t.Helper()
	ro := &rolloutsv1beta1.Rollout{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ro); err != nil {
		t.Fatal(err)
	}
	return ro
}

func approveRollout(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	ro := &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	raw := []byte(`{"status":{"canaryStatus":{"currentStepState":"StepReady"}}}`)
	if err := c.Status().Patch(context.Background(), ro, client.RawPatch("application/merge-patch+json", raw)); err != nil {
		t.Fatal(err)
	}
}

func waitAgentRollout(t *testing.T, c client.Client, ns string, phase rolloutsv1beta1.RolloutPhase, step int32, state rolloutsv1beta1.CanaryStepState) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s step %d %s", phase, step, state), func() (bool, string) {
		ro := getRolloutNamed(t, c, ns, "agent")
		sub := ro.Status.GetSubStatus()
		ok := ro.Status.Phase == phase && sub != nil && sub.CurrentStepState == state && (step == 0 || sub.CurrentStepIndex == step) &&
			ro.Status.ObservedGeneration == ro.Generation
		return ok, describe(ro) + "; " + describeBatchNamed(c, ns, "agent")
	})
}

func describeBatchNamed(c client.Client, ns, name string) string {
	br := &rolloutsv1beta1.BatchRelease{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, br); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("BatchRelease batch %d state %s", br.Status.CanaryStatus.CurrentBatch, br.Status.CanaryStatus.CurrentBatchState)
}
