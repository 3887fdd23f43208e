package control_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/nativedaemonset"
	"github.com/flotilla-dev/flotilla/test/managertest"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

const itTimeout = 90 * time.Second

func itScheme(t *testing.T) *runtime.Scheme {
	return managertest.Scheme(t, clientgoscheme.AddToScheme, rolloutsv1beta1.AddToScheme)
}

// directClient reads straight from the apiserver: what the tests assert.
func directClient(t *testing.T) client.Client {
	return managertest.DirectClient(t, clusterConfig, itScheme(t))
}

// startManager runs a manager until the test ends and returns its cached client, the kind of client the
// engine hands the controls.
func startManager(t *testing.T, setup func(ctrl.Manager) error) client.Client {
	t.Helper()
	return managertest.Start(t, clusterConfig, itScheme(t), setup).GetClient()
}

// releaseTarget is a release of the workload apiVersion/kind ns/name by a BatchRelease that exists only as an
// owner reference.
func releaseTarget(ns, apiVersion, kind, name string, plan rolloutsv1beta1.ReleasePlan) control.Target {
	return control.Target{
		Namespace: ns,
		Ref:       rolloutsv1beta1.ObjectRef{APIVersion: apiVersion, Kind: kind, Name: name},
		Owner: metav1.OwnerReference{
			APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: "BatchRelease", Name: name,
			UID: uuid.NewUUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		},
		Plan: plan,
	}
}

func podTemplate(app, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "main", Image: image}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
}

// eventually polls cond until it holds; what names the state in the failure.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	managertest.Eventually(t, itTimeout, what, cond)
}

// readUntil polls ctl.Read until ok accepts the info, and returns it.
func readUntil(t *testing.T, ctl control.WorkloadControl, what string, ok func(*control.WorkloadInfo) bool) *control.WorkloadInfo {
	t.Helper()
	var info *control.WorkloadInfo
	eventually(t, what, func(ctx context.Context) (bool, error) {
		var err error
		info, err = ctl.Read(ctx)
		return err == nil && ok(info), err
	})
	return info
}

// upgradeBatch calls UpgradeBatch as the BatchRelease controller would: again while the control has not
// observed its own last write.
func upgradeBatch(t *testing.T, ctl control.WorkloadControl, desired int32) {
	t.Helper()
	eventually(t, fmt.Sprintf("UpgradeBatch(%d)", desired), func(ctx context.Context) (bool, error) {
		err := ctl.UpgradeBatch(ctx, control.Batch{DesiredUpdated: desired})
		if errors.Is(err, control.ErrNotObserved) {
			return false, nil
		}
		return err == nil, err
	})
}

// finalizeUntilDone calls Finalize as the BatchRelease controller would, until it reports done.
func finalizeUntilDone(t *testing.T, ctl control.WorkloadControl) {
	t.Helper()
	eventually(t, "Finalize done", func(ctx context.Context) (bool, error) { return ctl.Finalize(ctx) })
}

// podRevisions maps the pods sel selects to their revision label.
func podRevisions(t *testing.T, c client.Client, ns string, sel labels.Selector, key string) map[string]string {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p.Labels[key]
		}
	}
	return out
}

func mustPatch(t *testing.T, c client.Client, obj client.Object, patch string) {
	t.Helper()
	if err := c.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func mustGet(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
}

// TestStatefulSetRelease releases a 4-replica StatefulSet in batches of 1 and 2 and completes it: the
// partition freezes, then lets exactly the highest ordinals update, never moves back, and is gone at the end
// with every pod updated.
func TestStatefulSetRelease(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	t.Parallel()
	c := directClient(t)
	ns := managertest.Namespace(t, c, "control-it")
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](4), ServiceName: "web", PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate("web", "registry.example/web:v1"),
		},
	}
	if err := c.Create(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
	plan := rolloutsv1beta1.ReleasePlan{FinalizingPolicy: rolloutsv1beta1.WaitResumeFinalizingPolicyType}
	ctl := control.NewStatefulSetLike(c, releaseTarget(ns, "apps/v1", "StatefulSet", "web", plan))
	readUntil(t, ctl, "4 ready pods", func(i *control.WorkloadInfo) bool { return i.Consistent && i.UpdatedReadyReplicas == 4 })

	if err := ctl.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	assertPartition(t, c, sts, ptr.To[int32](32767))
	mustPatch(t, c, sts, `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.example/web:v2"}]}}}}`)
	info := readUntil(t, ctl, "the new revision", func(i *control.WorkloadInfo) bool {
		return i.Consistent && i.UpdateRevision != i.StableRevision
	})
	if !info.Controlled || info.UpdatedReplicas != 0 {
		t.Fatalf("frozen StatefulSet: controlled=%v updated=%d, want true and 0", info.Controlled, info.UpdatedReplicas)
	}
	stable, update := info.StableRevision, info.UpdateRevision

	for _, batch := range []struct {
		desired int32
		updated []string
	}{{1, []string{"web-3"}}, {2, []string{"web-2", "web-3"}}} {
		if err := ctl.UpgradeBatch(t.Context(), control.Batch{DesiredUpdated: batch.desired}); err != nil {
			t.Fatal(err)
		}
		assertPartition(t, c, sts, ptr.To(4-batch.desired))
		info := readUntil(t, ctl, fmt.Sprintf("batch of %d", batch.desired), func(i *control.WorkloadInfo) bool {
			return i.UpdatedReplicas == batch.desired && i.UpdatedReadyReplicas == batch.desired
		})
		want := map[string]string{"web-0": stable, "web-1": stable, "web-2": stable, "web-3": stable}
		for _, name := range batch.updated {
			want[name] = update
		}
		assertRevisions(t, podRevisions(t, c, ns, labels.SelectorFromSet(labels.Set{"app": "web"}), info.RevisionLabelKey), want)
	}

	// Neither a smaller batch nor a repeated Initialize moves the release back.
	if err := ctl.UpgradeBatch(t.Context(), control.Batch{DesiredUpdated: 1}); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	assertPartition(t, c, sts, ptr.To[int32](2))

	finalizeUntilDone(t, ctl)
	// The apiserver defaults the removed partition to 0.
	assertPartition(t, c, sts, ptr.To[int32](0))
	if _, ok := sts.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]; ok {
		t.Error("control-info left on the StatefulSet")
	}
	all := podRevisions(t, c, ns, labels.SelectorFromSet(labels.Set{"app": "web"}), rolloutsv1beta1.ControllerRevisionHashLabelKey)
	assertRevisions(t, all, map[string]string{"web-0": update, "web-1": update, "web-2": update, "web-3": update})
}

// assertPartition re-reads sts and checks its partition (nil: none).
func assertPartition(t *testing.T, c client.Client, sts *appsv1.StatefulSet, want *int32) {
	t.Helper()
	mustGet(t, c, sts)
	var got *int32
	if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		got = ru.Partition
	}
	if (got == nil) != (want == nil) || (got != nil && *got != *want) {
		t.Fatalf("partition = %v, want %v", ptr.Deref(got, -1), ptr.Deref(want, -1))
	}
}

func assertRevisions(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("pod revisions = %v, want %v", got, want)
	}
	for name, rev := range want {
		if got[name] != rev {
			t.Fatalf("pod revisions = %v, want %v", got, want)
		}
	}
}

// TestNativeDaemonSetRelease releases a DaemonSet over two nodes with the nativedaemonset controller running:
// the DaemonSet switches to OnDelete, each batch replaces exactly the pods it asks for, and finalising restores
// the RollingUpdate strategy and drops the release's annotations.
func TestNativeDaemonSetRelease(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	t.Parallel()
	c := directClient(t)
	startManager(t, nativedaemonset.SetupWithManager)
	ns := managertest.Namespace(t, c, "control-it")
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: podTemplate("agent", "registry.example/agent:v1"),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
		},
	}
	if err := c.Create(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	plan := rolloutsv1beta1.ReleasePlan{FinalizingPolicy: rolloutsv1beta1.WaitResumeFinalizingPolicyType}
	ctl := control.NewNativeDaemonSet(c, releaseTarget(ns, "apps/v1", "DaemonSet", "agent", plan))
	readUntil(t, ctl, "a ready pod per node", func(i *control.WorkloadInfo) bool {
		return i.Consistent && i.Replicas == 2 && i.UpdatedReadyReplicas == 2
	})

	if err := ctl.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, ds)
	if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType ||
		ds.Annotations[rolloutsv1beta1.DaemonSetOriginalUpdateStrategyAnnotation] != "RollingUpdate" {
		t.Fatalf("after Initialize strategy=%s annotations=%v", ds.Spec.UpdateStrategy.Type, ds.Annotations)
	}
	mustPatch(t, c, ds, `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.example/agent:v2"}]}}}}`)
	info := readUntil(t, ctl, "the new revision", func(i *control.WorkloadInfo) bool {
		return i.Consistent && i.UpdateRevision != "" && i.UpdateRevision != i.StableRevision
	})
	if !info.Controlled || info.UpdatedReplicas != 0 {
		t.Fatalf("frozen DaemonSet: controlled=%v updated=%d, want true and 0", info.Controlled, info.UpdatedReplicas)
	}

	if err := ctl.UpgradeBatch(t.Context(), control.Batch{DesiredUpdated: 1}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, ctl, "batch of 1", func(i *control.WorkloadInfo) bool { return i.UpdatedReadyReplicas == 1 })
	assertDaemonSetHolds(t, ctl, 1)
	assertDeletionEvent(t, c, ds)

	if err := ctl.UpgradeBatch(t.Context(), control.Batch{DesiredUpdated: 2}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, ctl, "batch of 2", func(i *control.WorkloadInfo) bool { return i.UpdatedReadyReplicas == 2 })

	finalizeUntilDone(t, ctl)
	mustGet(t, c, ds)
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		t.Errorf("strategy after Finalize = %s, want RollingUpdate", ds.Spec.UpdateStrategy.Type)
	}
	for _, key := range []string{
		rolloutsv1beta1.BatchReleaseControlAnnotation, rolloutsv1beta1.DaemonSetAdvancedControlAnnotation,
		rolloutsv1beta1.DaemonSetRevisionAnnotation, rolloutsv1beta1.DaemonSetOriginalUpdateStrategyAnnotation,
	} {
		if _, ok := ds.Annotations[key]; ok {
			t.Errorf("annotation %s left after Finalize", key)
		}
	}
}

// assertDaemonSetHolds checks for a few seconds that the batch stays at updated pods: the controller does not
// delete past the partition.
func assertDaemonSetHolds(t *testing.T, ctl control.WorkloadControl, updated int32) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		info, err := ctl.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if info.UpdatedReplicas != updated {
			t.Fatalf("updated pods = %d while the batch asks for %d", info.UpdatedReplicas, updated)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func assertDeletionEvent(t *testing.T, c client.Client, ds *appsv1.DaemonSet) {
	t.Helper()
	eventually(t, "a SuccessfulDelete event on the DaemonSet", func(ctx context.Context) (bool, error) {
		var events eventsv1.EventList
		if err := c.List(ctx, &events, client.InNamespace(ds.Namespace)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "SuccessfulDelete" && e.Regarding.UID == ds.UID && e.ReportingController == nativedaemonset.ControllerName {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestDeploymentCanaryRelease releases a Deployment through a canary Deployment in batches of 1 and 3, with the
// manager's cached client as the engine uses it: one canary only, scaled up and never down, then the stable
// Deployment resumes and the canary is deleted.
func TestDeploymentCanaryRelease(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	t.Parallel()
	c := directClient(t)
	cached := startManager(t, nil)
	ns := managertest.Namespace(t, c, "control-it")
	stable := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate("web", "registry.example/web:v1"),
		},
	}
	if err := c.Create(t.Context(), stable); err != nil {
		t.Fatal(err)
	}
	eventually(t, "4 available pods", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(stable), stable)
		return err == nil && stable.Status.ObservedGeneration >= stable.Generation && stable.Status.AvailableReplicas == 4, err
	})
	// What the workload webhook does to a new template under a Rollout.
	mustPatch(t, c, stable, `{"spec":{"paused":true,"template":{"spec":{"containers":[{"name":"main","image":"registry.example/web:v2"}]}}}}`)

	plan := rolloutsv1beta1.ReleasePlan{
		FinalizingPolicy:         rolloutsv1beta1.WaitResumeFinalizingPolicyType,
		PatchPodTemplateMetadata: &rolloutsv1beta1.PatchPodTemplateMetadata{Labels: map[string]string{"track": "canary"}},
	}
	target := releaseTarget(ns, "apps/v1", "Deployment", "web", plan)
	ctl := control.NewDeploymentCanary(cached, target)
	if err := ctl.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}

	for _, desired := range []int32{1, 1, 3} {
		upgradeBatch(t, ctl, desired)
	}
	info := readUntil(t, ctl, "3 canary pods", func(i *control.WorkloadInfo) bool { return i.Controlled && i.UpdatedReadyReplicas == 3 })
	canary := onlyCanary(t, c, ns, target.Owner)
	upgradeBatch(t, ctl, 1)
	mustGet(t, c, canary)
	if *canary.Spec.Replicas != 3 {
		t.Errorf("canary scaled to %d by a smaller batch, want 3", *canary.Spec.Replicas)
	}
	assertCanaryPods(t, c, ns, info.UpdatedPods, 3)
	mustGet(t, c, stable)
	if stable.Status.Replicas != 4 || stable.Status.UpdatedReplicas != 0 {
		t.Errorf("stable during the release: replicas=%d updated=%d, want 4 old pods",
			stable.Status.Replicas, stable.Status.UpdatedReplicas)
	}

	finalizeUntilDone(t, ctl)
	mustGet(t, c, stable)
	if stable.Spec.Paused || stable.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation] != "" ||
		stable.Status.UpdatedReplicas != 4 || stable.Status.AvailableReplicas != 4 {
		t.Errorf("stable after Finalize: paused=%v annotations=%v updated=%d available=%d", stable.Spec.Paused,
			stable.Annotations, stable.Status.UpdatedReplicas, stable.Status.AvailableReplicas)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(canary), canary); !apierrors.IsNotFound(err) {
		t.Errorf("canary Deployment after Finalize: %v (finalizers %v)", err, canary.Finalizers)
	}
}

// onlyCanary returns the single canary Deployment of the release and checks how it was made.
func onlyCanary(t *testing.T, c client.Client, ns string, owner metav1.OwnerReference) *appsv1.Deployment {
	t.Helper()
	var list appsv1.DeploymentList
	if err := c.List(t.Context(), &list, client.InNamespace(ns), client.MatchingLabels{rolloutsv1beta1.CanaryDeploymentLabel: "web"}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d canary Deployments, want 1", len(list.Items))
	}
	d := &list.Items[0]
	if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].UID != owner.UID || d.Spec.Paused ||
		len(d.Finalizers) != 1 || d.Finalizers[0] != rolloutsv1beta1.CanaryDeploymentFinalizer ||
		!control.ControlledBy(d.Annotations, owner) || d.Spec.Template.Labels["track"] != "canary" {
		t.Fatalf("canary Deployment %s: owners=%v paused=%v finalizers=%v annotations=%v template labels=%v", d.Name,
			d.OwnerReferences, d.Spec.Paused, d.Finalizers, d.Annotations, d.Spec.Template.Labels)
	}
	return d
}

// assertCanaryPods checks that the release's UpdatedPods selects exactly the canary's pods, all on the new
// template.
func assertCanaryPods(t *testing.T, c client.Client, ns string, sel labels.Selector, want int) {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		n++
		if p.Spec.Containers[0].Image != "registry.example/web:v2" || p.Labels["track"] != "canary" {
			t.Errorf("UpdatedPods selects pod %s with image %s and labels %v", p.Name, p.Spec.Containers[0].Image, p.Labels)
		}
	}
	if n != want {
		t.Errorf("UpdatedPods selects %d pods, want %d", n, want)
	}
}
