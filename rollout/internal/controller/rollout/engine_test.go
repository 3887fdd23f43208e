package rollout_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/batchrelease"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/rollout"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var cfg *rest.Config

func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{ControllerManager: true, Scheduler: true, Nodes: 2}, &cfg))
}

func newScheme(t *testing.T) *runtime.Scheme {
	return managertest.Scheme(t, clientgoscheme.AddToScheme, rolloutsv1beta1.AddToScheme, kruiseappsv1alpha1.AddToScheme)
}

// startEngine runs the Rollout and BatchRelease controllers in-process until the test ends.
func startEngine(t *testing.T) client.Client {
	t.Helper()
	managertest.RequireCluster(t, cfg)
	managertest.Start(t, cfg, newScheme(t), func(mgr ctrl.Manager) error {
		controls := control.NewRegistry()
		if err := control.RegisterNative(controls, true); err != nil {
			return err
		}
		ro := &rollout.Reconciler{Client: mgr.GetClient(), Controls: controls, Clock: clock.RealClock{}, Recorder: mgr.GetEventRecorder(rollout.ControllerName)}
		br := &batchrelease.Reconciler{Client: mgr.GetClient(), Controls: controls, Clock: clock.RealClock{}, Recorder: mgr.GetEventRecorder(batchrelease.ControllerName)}
		return errors.Join(control.IndexReplicaSets(mgr), ro.SetupWithManager(mgr), br.SetupWithManager(mgr))
	})
	return managertest.DirectClient(t, cfg, newScheme(t))
}

func namespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "engine-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func statefulSet(ns string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": "web"}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/web:v1"}}},
			},
		},
	}
}

func canaryRollout(ns string, steps ...string) *rolloutsv1beta1.Rollout {
	ro := &rolloutsv1beta1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"},
			Strategy:    rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{}},
		},
	}
	for _, s := range steps {
		r := intstr.Parse(s)
		ro.Spec.Strategy.Canary.Steps = append(ro.Spec.Strategy.Canary.Steps, rolloutsv1beta1.CanaryStep{Replicas: &r})
	}
	return ro
}

// release changes the image to v2 the way a user does and freezes the workload the way the workload webhook does.
func release(t *testing.T, c client.Client, ns string) {
	t.Helper()
	patch := map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{rolloutsv1beta1.InProgressingAnnotation: `{"rolloutName":"web"}`}},
		"spec": map[string]any{
			"updateStrategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": 32767}},
			"template":       map[string]any{"spec": map[string]any{"containers": []map[string]any{{"name": "app", "image": "example.com/web:v2"}}}},
		},
	}
	raw, _ := json.Marshal(patch)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	if err := c.Patch(context.Background(), sts, client.RawPatch("application/strategic-merge-patch+json", raw)); err != nil {
		t.Fatal(err)
	}
}

// approve sends the status patch kubectl-kruise sends.
func approve(t *testing.T, c client.Client, ns string) {
	t.Helper()
	ro := &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	raw := []byte(`{"status":{"canaryStatus":{"currentStepState":"StepReady"}}}`)
	if err := c.Status().Patch(context.Background(), ro, client.RawPatch("application/merge-patch+json", raw)); err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 90*time.Second, true,
		func(context.Context) (bool, error) {
			ok, msg := cond()
			last = msg
			return ok, nil
		})
	if err != nil {
		t.Fatalf("%s: not reached; last: %s", what, last)
	}
}

func getRollout(t *testing.T, c client.Client, ns string) *rolloutsv1beta1.Rollout {
	t.Helper()
	ro := &rolloutsv1beta1.Rollout{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, ro); err != nil {
		t.Fatal(err)
	}
	return ro
}

func getSTS(t *testing.T, c client.Client, ns string) *appsv1.StatefulSet {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, sts); err != nil {
		t.Fatal(err)
	}
	return sts
}

func describe(ro *rolloutsv1beta1.Rollout) string {
	sub := ro.Status.GetSubStatus()
	if sub == nil {
		return fmt.Sprintf("phase=%s msg=%q", ro.Status.Phase, ro.Status.Message)
	}
	return fmt.Sprintf("phase=%s step=%d state=%s fin=%s msg=%q", ro.Status.Phase, sub.CurrentStepIndex, sub.CurrentStepState, sub.FinalisingStep, ro.Status.Message)
}

func describeBatch(c client.Client, ns string) string {
	br := &rolloutsv1beta1.BatchRelease{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, br); err != nil {
		return err.Error()
	}
	st, _ := json.Marshal(br.Status)
	return fmt.Sprintf("BatchRelease generation %d status %s", br.Generation, st)
}

// waitPaused waits until the release pauses at a step.
func waitPaused(t *testing.T, c client.Client, ns string, step int32) *rolloutsv1beta1.Rollout {
	t.Helper()
	const state = rolloutsv1beta1.CanaryStepStatePaused
	var ro *rolloutsv1beta1.Rollout
	eventually(t, fmt.Sprintf("step %d %s", step, state), func() (bool, string) {
		ro = getRollout(t, c, ns)
		sub := ro.Status.GetSubStatus()
		return sub != nil && sub.CurrentStepIndex == step && sub.CurrentStepState == state, describe(ro) + "; " + describeBatch(c, ns)
	})
	return ro
}

func waitUpdated(t *testing.T, c client.Client, ns string, want int32) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d updated ready pods", want), func() (bool, string) {
		sts := getSTS(t, c, ns)
		s := sts.Status
		return s.UpdatedReplicas == want && s.ReadyReplicas == *sts.Spec.Replicas,
			fmt.Sprintf("updated=%d ready=%d current=%s update=%s", s.UpdatedReplicas, s.ReadyReplicas, s.CurrentRevision, s.UpdateRevision)
	})
}

func condition(ro *rolloutsv1beta1.Rollout, t rolloutsv1beta1.RolloutConditionType) string {
	if c := plan.GetCondition(ro.Status.Conditions, t); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return ""
}

func setup(t *testing.T, steps ...string) (client.Client, string) {
	c := startEngine(t)
	ns := namespace(t, c)
	ctx := context.Background()
	if err := c.Create(ctx, statefulSet(ns, 4)); err != nil {
		t.Fatal(err)
	}
	waitUpdated(t, c, ns, 4)
	if err := c.Create(ctx, canaryRollout(ns, steps...)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "first Healthy", func() (bool, string) {
		ro := getRollout(t, c, ns)
		sub := ro.Status.GetSubStatus()
		return ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy && sub != nil &&
			sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted && ro.Status.ObservedGeneration == ro.Generation, describe(ro)
	})
	return c, ns
}

// The seed document's multi-batch story on a StatefulSet: batches of 1, 50% and 100%, each approved with
// the status patch CI sends.
func TestMultiBatchWithApprovals(t *testing.T) {
	c, ns := setup(t, "1", "50%", "100%")
	ro := getRollout(t, c, ns)
	if got := condition(ro, plan.ConditionReady); got != "True/Completed" {
		t.Errorf("Ready before a release = %q", got)
	}
	if got := getSTS(t, c, ns).Labels[rolloutsv1beta1.WorkloadTypeLabel]; got != "statefulset" {
		t.Errorf("workload-type label = %q", got)
	}

	release(t, c, ns)
	ro = waitPaused(t, c, ns, 1)
	waitUpdated(t, c, ns, 1)
	if got := condition(ro, plan.ConditionReconciling); got != "True/AwaitingApproval" {
		t.Errorf("Reconciling while waiting for approval = %q", got)
	}
	if got := condition(ro, plan.ConditionStalled); got != "" {
		t.Errorf("Stalled while waiting for approval = %q, want none: a gate is no failure", got)
	}
	if ro.Status.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused || ro.Status.CurrentStepIndex != 1 {
		t.Errorf("top-level step mirror = %d %s", ro.Status.CurrentStepIndex, ro.Status.CurrentStepState)
	}
	if p := getSTS(t, c, ns).Spec.UpdateStrategy.RollingUpdate.Partition; p == nil || *p != 3 {
		t.Errorf("partition after batch 1 = %v, want 3", p)
	}

	addForeignConditions(t, c, ns)
	approve(t, c, ns)
	ro = waitPaused(t, c, ns, 2)
	waitUpdated(t, c, ns, 2)
	expectForeignConditions(t, ro)

	approve(t, c, ns)
	eventually(t, "release completed", func() (bool, string) {
		ro = getRollout(t, c, ns)
		return ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy && condition(ro, rolloutsv1beta1.RolloutConditionSucceeded) == "True/Success", describe(ro)
	})
	waitUpdated(t, c, ns, 4)
	sts := getSTS(t, c, ns)
	if _, ok := sts.Annotations[rolloutsv1beta1.InProgressingAnnotation]; ok {
		t.Error("in-progressing annotation left on the workload")
	}
	if _, ok := sts.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]; ok {
		t.Error("control-info annotation left on the workload")
	}
	expectForeignConditions(t, getRollout(t, c, ns))
	eventually(t, "BatchRelease deleted", func() (bool, string) {
		err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, &rolloutsv1beta1.BatchRelease{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if got := condition(getRollout(t, c, ns), plan.ConditionReady); got != "True/Completed" {
		t.Errorf("Ready after the release = %q", got)
	}
	expectEvent(t, c, ns, "upgrade step(1) canary pods with new versions done")
}

// Deleting a Rollout mid-release lets the workload finish on its own; nothing stays frozen.
func TestDeleteMidRelease(t *testing.T) {
	c, ns := setup(t, "1", "100%")
	release(t, c, ns)
	waitPaused(t, c, ns, 1)
	if err := c.Delete(context.Background(), getRollout(t, c, ns)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Rollout gone", func() (bool, string) {
		err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, &rolloutsv1beta1.Rollout{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	waitUpdated(t, c, ns, 4)
	sts := getSTS(t, c, ns)
	if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition != 0 {
		t.Errorf("partition left at %d", *ru.Partition)
	}
}

// A step jump written to nextStepIndex moves the release to that step.
func TestStepJump(t *testing.T) {
	c, ns := setup(t, "1", "50%", "100%")
	release(t, c, ns)
	waitPaused(t, c, ns, 1)
	ro := &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	raw := []byte(`{"status":{"canaryStatus":{"nextStepIndex":3}}}`)
	if err := c.Status().Patch(context.Background(), ro, client.RawPatch("application/merge-patch+json", raw)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "jumped to the last step and completed", func() (bool, string) {
		ro := getRollout(t, c, ns)
		return ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy && condition(ro, rolloutsv1beta1.RolloutConditionSucceeded) == "True/Success", describe(ro)
	})
	waitUpdated(t, c, ns, 4)
}

func expectEvent(t *testing.T, c client.Client, ns, note string) {
	t.Helper()
	eventually(t, "event "+note, func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var notes []string
		for _, e := range list.Items {
			if slices.Contains(strings.Split(e.Note, "; "), note) {
				return true, ""
			}
			notes = append(notes, e.Note)
		}
		return false, strings.Join(notes, "; ")
	})
}

// A malformed deployment-strategy annotation stalls the release with an event and conditions that say why,
// and deleting the Rollout still releases the Deployment.
func TestMalformedAnnotationStallsAndReleases(t *testing.T) {
	c := startEngine(t)
	ns := namespace(t, c)
	ctx := context.Background()
	d := deployment(ns)
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	ro := canaryRollout(ns, "1", "50%", "100%")
	ro.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	if err := c.Create(ctx, ro); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Healthy", func() (bool, string) {
		ro := getRollout(t, c, ns)
		return ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy, describe(ro)
	})
	freezeDeployment(t, c, ns)
	eventually(t, "strategy annotation written", func() (bool, string) {
		return getDeploymentObj(t, c, ns).Annotations[rolloutsv1beta1.DeploymentStrategyAnnotation] != "", describeBatch(c, ns)
	})
	patchMeta(t, c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}},
		`{"metadata":{"annotations":{"rollouts.kruise.io/deployment-strategy":"{not json"}}}`)
	jump := &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	if err := c.Status().Patch(ctx, jump, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"canaryStatus":{"nextStepIndex":3}}}`))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Rollout stalled by the BatchRelease", func() (bool, string) {
		ro := getRollout(t, c, ns)
		return condition(ro, plan.ConditionStalled) == "True/"+plan.ReasonBatchReleaseFailed &&
			strings.Contains(ro.Status.Message, rolloutsv1beta1.DeploymentStrategyAnnotation), describe(ro) + "; " + describeBatch(c, ns)
	})
	expectWarning(t, c, ns, "ReconcileFailed")

	if err := c.Delete(ctx, getRollout(t, c, ns)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Deployment released", func() (bool, string) {
		d := getDeploymentObj(t, c, ns)
		_, marked := d.Annotations[rolloutsv1beta1.DeploymentStrategyAnnotation]
		return !d.Spec.Paused && d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && !marked,
			fmt.Sprintf("paused=%v strategy=%s annotations=%v", d.Spec.Paused, d.Spec.Strategy.Type, d.Annotations)
	})
}

func deployment(ns string) *appsv1.Deployment {
	sts := statefulSet(ns, 4)
	return &appsv1.Deployment{
		ObjectMeta: sts.ObjectMeta,
		Spec:       appsv1.DeploymentSpec{Replicas: sts.Spec.Replicas, Selector: sts.Spec.Selector, Template: sts.Spec.Template},
	}
}

// freezeDeployment changes the image and freezes the Deployment the way the workload webhook does.
func freezeDeployment(t *testing.T, c client.Client, ns string) {
	t.Helper()
	rss := &appsv1.ReplicaSetList{}
	if err := c.List(context.Background(), rss, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	stable := ""
	for _, rs := range rss.Items {
		stable = rs.Labels["pod-template-hash"]
	}
	// kube-controller-manager and the engine write the Deployment too: retry on their conflicts.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := getDeploymentObj(t, c, ns)
		d.Labels = map[string]string{rolloutsv1beta1.DeploymentStableRevisionLabel: stable}
		d.Annotations = map[string]string{rolloutsv1beta1.InProgressingAnnotation: `{"rolloutName":"web"}`}
		d.Spec.Paused = true
		d.Spec.Template.Spec.Containers[0].Image = "example.com/web:v2"
		return c.Update(context.Background(), d)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func getDeploymentObj(t *testing.T, c client.Client, ns string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func patchMeta(t *testing.T, c client.Client, obj client.Object, patch string) {
	t.Helper()
	if err := c.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func expectWarning(t *testing.T, c client.Client, ns, reason string) {
	t.Helper()
	eventually(t, "warning "+reason, func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.Reason == reason && e.Type == corev1.EventTypeWarning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(list.Items))
	})
}

// addForeignConditions writes conditions the way a third-party gate does: its own Stalled, and a type of its own.
func addForeignConditions(t *testing.T, c client.Client, ns string) {
	t.Helper()
	// The engine may write the status between the read and the write, as any other writer's would.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ro := getRollout(t, c, ns)
		conds := plan.RemoveCondition(ro.Status.Conditions, plan.ConditionStalled)
		ro.Status.Conditions = append(conds,
			rolloutsv1beta1.RolloutCondition{Type: plan.ConditionStalled, Status: corev1.ConditionFalse, Reason: "GateOpen", Message: "external gate"},
			rolloutsv1beta1.RolloutCondition{Type: "example.com/Gate", Status: corev1.ConditionTrue, Reason: "Open", Message: "external gate"})
		return c.Status().Update(context.Background(), ro)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func expectForeignConditions(t *testing.T, ro *rolloutsv1beta1.Rollout) {
	t.Helper()
	if got := condition(ro, plan.ConditionStalled); got != "False/GateOpen" {
		t.Errorf("foreign Stalled condition = %q", got)
	}
	if got := condition(ro, "example.com/Gate"); got != "True/Open" {
		t.Errorf("foreign condition = %q", got)
	}
}

// A Rollout deleted while its workload is marked and frozen but no BatchRelease exists (the gap of a
// continuous release, or a new revision the webhook froze before the first BatchRelease): the engine, started
// only then, creates a BatchRelease to release the workload before the Rollout goes.
func TestDeleteWithoutBatchReleaseReleasesTheWorkload(t *testing.T) {
	managertest.RequireCluster(t, cfg)
	for _, kind := range []string{"StatefulSet", "Deployment"} {
		t.Run(kind, func(t *testing.T) {
			c := managertest.DirectClient(t, cfg, newScheme(t))
			ns := namespace(t, c)
			frozen := freezeWithoutRelease(t, c, ns, kind)
			ro := canaryRollout(ns, "1", "100%")
			ro.Spec.WorkloadRef.Kind = kind
			ro.Finalizers = []string{rolloutsv1beta1.RolloutFinalizer}
			ctx := context.Background()
			if err := c.Create(ctx, ro); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete(ctx, ro); err != nil {
				t.Fatal(err)
			}
			startEngine(t)
			eventually(t, "Rollout gone", func() (bool, string) {
				err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &rolloutsv1beta1.Rollout{})
				return apierrors.IsNotFound(err), fmt.Sprint(err) + "; " + describeBatch(c, ns)
			})
			if still := frozen(); still != "" {
				t.Fatalf("the %s is left frozen: %s", kind, still)
			}
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &rolloutsv1beta1.BatchRelease{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("BatchRelease left behind: %v", err)
			}
		})
	}
}

// freezeWithoutRelease creates the workload, changes its image and freezes it the way the workload webhook
// does, with no engine running; frozen then describes what still holds the workload ("" once released).
func freezeWithoutRelease(t *testing.T, c client.Client, ns, kind string) (frozen func() string) {
	t.Helper()
	ctx := context.Background()
	if kind == "StatefulSet" {
		if err := c.Create(ctx, statefulSet(ns, 4)); err != nil {
			t.Fatal(err)
		}
		waitUpdated(t, c, ns, 4)
		release(t, c, ns)
		return func() string {
			sts := getSTS(t, c, ns)
			if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition != 0 {
				return fmt.Sprintf("partition %d", *ru.Partition)
			}
			return inProgressing(sts.Annotations)
		}
	}
	if err := c.Create(ctx, deployment(ns)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Deployment available", func() (bool, string) {
		d := getDeploymentObj(t, c, ns)
		return d.Status.AvailableReplicas == 4, fmt.Sprintf("available=%d", d.Status.AvailableReplicas)
	})
	freezeDeployment(t, c, ns)
	return func() string {
		d := getDeploymentObj(t, c, ns)
		if d.Spec.Paused {
			return fmt.Sprintf("paused, labels %v", d.Labels)
		}
		return inProgressing(d.Annotations)
	}
}

func inProgressing(annotations map[string]string) string {
	if v, ok := annotations[rolloutsv1beta1.InProgressingAnnotation]; ok {
		return "in-progressing " + v
	}
	return ""
}
