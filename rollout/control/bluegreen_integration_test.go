package control_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// TestDeploymentBlueGreenRelease releases a 4-replica Deployment blue-green in batches of 2 and 4 with
// kube-controller-manager rolling it: every batch surges new pods beside the old ones and deletes none, and
// finalising rolls the Deployment out to 4 new pods, restores its strategy and turns its HPA back on.
func TestDeploymentBlueGreenRelease(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	t.Parallel()
	c := directClient(t)
	ns := managertest.Namespace(t, c, "control-it")
	d := blueGreenDeployment(ns)
	hpa := deploymentHPA(ns)
	if err := c.Create(t.Context(), hpa); err != nil {
		t.Fatal(err)
	}
	createAvailable(t, c, d)

	plan := rolloutsv1beta1.ReleasePlan{
		RollingStyle: rolloutsv1beta1.BlueGreenRollingStyle, FinalizingPolicy: rolloutsv1beta1.WaitResumeFinalizingPolicyType,
	}
	ctl := control.NewDeploymentBlueGreen(c, blueGreenTarget(ns, plan))
	if err := ctl.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	assertInitialized(t, c, d, hpa)
	all := labels.SelectorFromSet(labels.Set{"app": "web"})
	old := podRevisions(t, c, ns, all, rolloutsv1beta1.PodTemplateHashLabelKey)

	// What the workload webhook does to a new revision during a blue-green release: pause it.
	mustPatch(t, c, d, `{"spec":{"paused":true,"template":{"spec":{"containers":[{"name":"main","image":"registry.example/web:v2"}]}}}}`)
	info := readUntil(t, ctl, "the new revision", func(i *control.WorkloadInfo) bool {
		return i.Consistent && i.UpdateRevision != i.StableRevision
	})
	if !info.Controlled || info.UpdatedReplicas != 0 {
		t.Fatalf("paused Deployment: controlled=%v updated=%d, want true and 0", info.Controlled, info.UpdatedReplicas)
	}

	for _, desired := range []int32{2, 4} {
		if err := ctl.UpgradeBatch(t.Context(), control.Batch{DesiredUpdated: desired}); err != nil {
			t.Fatal(err)
		}
		readUntil(t, ctl, fmt.Sprintf("batch of %d", desired), func(i *control.WorkloadInfo) bool {
			return i.UpdatedReplicas == desired && i.UpdatedReadyReplicas == desired
		})
		assertSurged(t, c, ns, old, info.UpdateRevision, int(desired))
	}
	// A smaller batch does not take the surge back.
	if err := ctl.UpgradeBatch(t.Context(), control.Batch{DesiredUpdated: 2}); err != nil {
		t.Fatal(err)
	}
	assertSurged(t, c, ns, old, info.UpdateRevision, 4)

	finalizeUntilDone(t, ctl)
	assertReleased(t, c, d, hpa, info.UpdateRevision)
}

// blueGreenTarget is a release of the Deployment ns/web by a BatchRelease that exists only as an owner
// reference.
func blueGreenTarget(ns string, plan rolloutsv1beta1.ReleasePlan) control.Target {
	return control.Target{
		Namespace: ns,
		Ref:       rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		Owner: metav1.OwnerReference{
			APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: "BatchRelease", Name: "web-bg",
			UID: uuid.NewUUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		},
		Plan: plan,
	}
}

func blueGreenDeployment(ns string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate("web", "registry.example/web:v1"),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(3)), MaxUnavailable: ptr.To(intstr.FromString("25%"))}},
			ProgressDeadlineSeconds: ptr.To[int32](300),
		},
	}
}

// deploymentHPA targets the Deployment web; no HPA controller runs, the object is only renamed and back.
func deploymentHPA(ns string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 8,
		},
	}
}

// assertInitialized checks the Deployment, its stable ReplicaSet and the HPA after Initialize.
func assertInitialized(t *testing.T, c client.Client, d *appsv1.Deployment, hpa *autoscalingv2.HorizontalPodAutoscaler) {
	t.Helper()
	mustGet(t, c, d)
	ru := d.Spec.Strategy.RollingUpdate
	if ru == nil || *ru.MaxSurge != intstr.FromInt32(1) || *ru.MaxUnavailable != intstr.FromInt32(0) ||
		d.Spec.MinReadySeconds != rolloutsv1beta1.MaxReadySeconds ||
		*d.Spec.ProgressDeadlineSeconds != rolloutsv1beta1.MaxProgressSeconds {
		t.Fatalf("after Initialize: strategy %+v minReadySeconds %d progressDeadlineSeconds %d", d.Spec.Strategy,
			d.Spec.MinReadySeconds, *d.Spec.ProgressDeadlineSeconds)
	}
	want := `{"maxUnavailable":"25%","maxSurge":3,"progressDeadlineSeconds":300}`
	if got := d.Annotations[rolloutsv1beta1.OriginalDeploymentStrategyAnnotation]; got != want {
		t.Fatalf("saved strategy = %s, want %s", got, want)
	}
	mustGet(t, c, hpa)
	if got := hpa.Spec.ScaleTargetRef.Name; got != "web"+rolloutsv1beta1.HPADisableSuffix {
		t.Fatalf("HPA target after Initialize = %q", got)
	}
	// Before the template changes the stable ReplicaSet is still the Deployment's current one, whose
	// minReadySeconds kube-controller-manager keeps in step with the Deployment's.
	eventually(t, "the stable ReplicaSet held", func(ctx context.Context) (bool, error) {
		var rss appsv1.ReplicaSetList
		err := c.List(ctx, &rss, client.InNamespace(d.Namespace))
		return err == nil && len(rss.Items) == 1 && rss.Items[0].Spec.MinReadySeconds == rolloutsv1beta1.MaxReadySeconds, err
	})
}

// assertSurged checks, for a few seconds, that every old pod still runs and exactly surged new pods of
// revision update run beside them.
func assertSurged(t *testing.T, c client.Client, ns string, old map[string]string, update string, surged int) {
	t.Helper()
	all := labels.SelectorFromSet(labels.Set{"app": "web"})
	deadline := time.Now().Add(2 * time.Second)
	for {
		pods := podRevisions(t, c, ns, all, rolloutsv1beta1.PodTemplateHashLabelKey)
		newPods := 0
		for _, rev := range pods {
			if rev == update {
				newPods++
			}
		}
		for name, rev := range old {
			if pods[name] != rev {
				t.Fatalf("old pod %s gone or replaced during a batch of %d: pods %v", name, surged, pods)
			}
		}
		if len(pods) != len(old)+surged || newPods != surged {
			t.Fatalf("pods = %v, want the %d old ones and %d of revision %s", pods, len(old), surged, update)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// assertReleased checks the Deployment and the HPA after Finalize: 4 new pods, settings and HPA restored.
func assertReleased(t *testing.T, c client.Client, d *appsv1.Deployment, hpa *autoscalingv2.HorizontalPodAutoscaler, update string) {
	t.Helper()
	mustGet(t, c, d)
	ru := d.Spec.Strategy.RollingUpdate
	if ru == nil || *ru.MaxSurge != intstr.FromInt32(3) || *ru.MaxUnavailable != intstr.FromString("25%") ||
		d.Spec.MinReadySeconds != 0 || *d.Spec.ProgressDeadlineSeconds != 300 || d.Spec.Paused {
		t.Errorf("after Finalize: strategy %+v minReadySeconds %d progressDeadlineSeconds %d paused %v", d.Spec.Strategy,
			d.Spec.MinReadySeconds, *d.Spec.ProgressDeadlineSeconds, d.Spec.Paused)
	}
	for _, key := range []string{rolloutsv1beta1.OriginalDeploymentStrategyAnnotation, rolloutsv1beta1.BatchReleaseControlAnnotation} {
		if _, ok := d.Annotations[key]; ok {
			t.Errorf("annotation %s left after Finalize", key)
		}
	}
	if s := d.Status; s.Replicas != 4 || s.UpdatedReplicas != 4 || s.AvailableReplicas != 4 {
		t.Errorf("after Finalize: replicas=%d updated=%d available=%d, want 4 each", s.Replicas, s.UpdatedReplicas, s.AvailableReplicas)
	}
	mustGet(t, c, hpa)
	if got := hpa.Spec.ScaleTargetRef.Name; got != "web" {
		t.Errorf("HPA target after Finalize = %q, want web", got)
	}
	all := labels.SelectorFromSet(labels.Set{"app": "web"})
	eventually(t, "4 pods, all new", func(context.Context) (bool, error) {
		pods := podRevisions(t, c, d.Namespace, all, rolloutsv1beta1.PodTemplateHashLabelKey)
		for _, rev := range pods {
			if rev != update {
				return false, nil
			}
		}
		return len(pods) == 4, nil
	})
}

// TestDeploymentBlueGreenHoldsStableReplicaSet follows the webhook's order (new revision paused first, then
// Initialize): the stable ReplicaSet is an old one, which keeps its inflated minReadySeconds so that its pods
// count as unavailable, and an Immediate finalise restores the Deployment at once.
func TestDeploymentBlueGreenHoldsStableReplicaSet(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	t.Parallel()
	c := directClient(t)
	ns := managertest.Namespace(t, c, "control-it")
	d := blueGreenDeployment(ns)
	d.Spec.Replicas = ptr.To[int32](2)
	createAvailable(t, c, d)
	mustPatch(t, c, d, `{"spec":{"paused":true,"template":{"spec":{"containers":[{"name":"main","image":"registry.example/web:v2"}]}}}}`)
	ctl := control.NewDeploymentBlueGreen(c, blueGreenTarget(ns, rolloutsv1beta1.ReleasePlan{
		RollingStyle: rolloutsv1beta1.BlueGreenRollingStyle, FinalizingPolicy: rolloutsv1beta1.ImmediateFinalizingPolicyType,
	}))
	if err := ctl.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	info := readUntil(t, ctl, "the new revision", func(i *control.WorkloadInfo) bool { return i.Consistent && i.Controlled })
	eventually(t, "the stable pods held unavailable", func(ctx context.Context) (bool, error) {
		var rss appsv1.ReplicaSetList
		if err := c.List(ctx, &rss, client.InNamespace(ns)); err != nil || len(rss.Items) != 1 {
			return false, err
		}
		rs := rss.Items[0]
		return rs.Labels[rolloutsv1beta1.PodTemplateHashLabelKey] == info.StableRevision &&
			rs.Spec.MinReadySeconds == rolloutsv1beta1.MaxReadySeconds && rs.Status.AvailableReplicas == 0, nil
	})

	if done, err := ctl.Finalize(t.Context()); err != nil || !done {
		t.Fatalf("Immediate Finalize = %v, %v; want done at once", done, err)
	}
	mustGet(t, c, d)
	if d.Spec.Paused || d.Spec.MinReadySeconds != 0 || *d.Spec.Strategy.RollingUpdate.MaxSurge != intstr.FromInt32(3) ||
		d.Annotations[rolloutsv1beta1.OriginalDeploymentStrategyAnnotation] != "" {
		t.Errorf("after Finalize: paused %v minReadySeconds %d strategy %+v annotations %v", d.Spec.Paused,
			d.Spec.MinReadySeconds, d.Spec.Strategy, d.Annotations)
	}
}

// TestDeploymentBlueGreenAbort aborts a blue-green release of a 4-replica Deployment at a batch of 2 with
// kube-controller-manager rolling it: the new pods go, the 4 old ones stay as they were, the template stays as
// the user wrote it, and nothing surges again until a retry's first batch, which surges only its own pod.
func TestDeploymentBlueGreenAbort(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	t.Parallel()
	c := directClient(t)
	ns := managertest.Namespace(t, c, "control-it")
	d := blueGreenDeployment(ns)
	createAvailable(t, c, d)
	target := blueGreenTarget(ns, rolloutsv1beta1.ReleasePlan{RollingStyle: rolloutsv1beta1.BlueGreenRollingStyle})
	ctl := control.NewDeploymentBlueGreen(c, target)
	if err := ctl.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	all := labels.SelectorFromSet(labels.Set{"app": "web"})
	old := podRevisions(t, c, ns, all, rolloutsv1beta1.PodTemplateHashLabelKey)
	mustPatch(t, c, d, `{"spec":{"paused":true,"template":{"spec":{"containers":[{"name":"main","image":"registry.example/web:v2"}]}}}}`)
	info := readUntil(t, ctl, "the new revision", func(i *control.WorkloadInfo) bool {
		return i.Consistent && i.UpdateRevision != i.StableRevision
	})
	if err := ctl.UpgradeBatch(t.Context(), control.Batch{DesiredUpdated: 2}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, ctl, "a batch of 2", func(i *control.WorkloadInfo) bool { return i.UpdatedReadyReplicas == 2 })

	// The BatchRelease asks again until the batch has no new pod.
	eventually(t, "no new pod", func(ctx context.Context) (bool, error) {
		if err := ctl.UpgradeBatch(ctx, control.Batch{DesiredUpdated: 0, Abort: true}); err != nil {
			return false, err
		}
		i, err := ctl.Read(ctx)
		return err == nil && i.Consistent && i.UpdatedReplicas == 0 && len(podRevisions(t, c, ns, all, rolloutsv1beta1.PodTemplateHashLabelKey)) == 4, err
	})
	assertSurged(t, c, ns, old, info.UpdateRevision, 0)
	mustGet(t, c, d)
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example/web:v2" || !d.Spec.Paused || *d.Spec.Replicas != 4 {
		t.Errorf("after the abort: image %s paused %v replicas %d; want the template as written, paused, 4", img, d.Spec.Paused, *d.Spec.Replicas)
	}
	if !control.ControlledBy(d.Annotations, target.Owner) {
		t.Errorf("after the abort the release no longer controls the Deployment: %v", d.Annotations)
	}

	// A retry starts again from its first batch: one new pod, not the aborted batch's two.
	if err := ctl.UpgradeBatch(t.Context(), control.Batch{DesiredUpdated: 1}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, ctl, "the retry's batch of 1", func(i *control.WorkloadInfo) bool { return i.UpdatedReadyReplicas == 1 })
	assertSurged(t, c, ns, old, info.UpdateRevision, 1)
}

// createAvailable creates the Deployment and waits until kube-controller-manager reports all its replicas
// available.
func createAvailable(t *testing.T, c client.Client, d *appsv1.Deployment) {
	t.Helper()
	if err := c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	eventually(t, fmt.Sprintf("%d available pods", *d.Spec.Replicas), func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(d), d)
		return err == nil && d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == *d.Spec.Replicas, err
	})
}
