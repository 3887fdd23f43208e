package rollouthistory_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/batchrelease"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/deployment"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/rollout"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/rollouthistory"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// cfg is nil when the tests run with -short: no control plane, pure tests only.
var cfg *rest.Config

func TestMain(m *testing.M) {
	opts := cluster.Options{
		ControllerManager: true,
		Controllers:       []string{"deployment-controller", "replicaset-controller", "serviceaccount-controller"},
		Scheduler:         true, Nodes: 2,
	}
	os.Exit(managertest.Main(m, opts, &cfg))
}

func newScheme(t *testing.T) *runtime.Scheme {
	return managertest.Scheme(t, clientgoscheme.AddToScheme, rolloutsv1beta1.AddToScheme, rolloutsv1alpha1.AddToScheme)
}

// startEngine runs the Rollout, BatchRelease, Advanced Deployment and RolloutHistory controllers in-process
// until the test ends, and returns a direct client.
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
		rh := &rollouthistory.Reconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(rollouthistory.ControllerName)}
		return errors.Join(ro.SetupWithManager(mgr), br.SetupWithManager(mgr), deployment.SetupWithManager(mgr), rh.SetupWithManager(mgr))
	})
	return managertest.DirectClient(t, cfg, newScheme(t))
}

func namespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "history-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
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

// getWeb reads the object named "web" of the test namespace.
func getWeb(t *testing.T, c client.Client, ns string, obj client.Object) {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, obj); err != nil {
		t.Fatal(err)
	}
}

func describe(ro *rolloutsv1beta1.Rollout) string {
	sub := ro.Status.GetSubStatus()
	if sub == nil {
		return fmt.Sprintf("phase=%s msg=%q", ro.Status.Phase, ro.Status.Message)
	}
	return fmt.Sprintf("phase=%s step=%d state=%s id=%s msg=%q", ro.Status.Phase, sub.CurrentStepIndex, sub.CurrentStepState, sub.ObservedRolloutID, ro.Status.Message)
}

// waitDeployment waits until every pod of the Deployment runs its latest template and is ready.
func waitDeployment(t *testing.T, c client.Client, ns string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	eventually(t, "deployment rolled out", func() (bool, string) {
		getWeb(t, c, ns, d)
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == *d.Spec.Replicas && s.ReadyReplicas == *d.Spec.Replicas && s.Replicas == *d.Spec.Replicas,
			fmt.Sprintf("generation=%d observed=%d replicas=%d updated=%d ready=%d", d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas)
	})
	return d
}

// waitSettled waits until the Rollout reports the (first or just finished) release completed.
func waitSettled(t *testing.T, c client.Client, ns string) *rolloutsv1beta1.Rollout {
	t.Helper()
	ro := &rolloutsv1beta1.Rollout{}
	eventually(t, "rollout healthy", func() (bool, string) {
		getWeb(t, c, ns, ro)
		sub := ro.Status.GetSubStatus()
		return ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy && sub != nil && sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted &&
			ro.Status.ObservedGeneration == ro.Generation, describe(ro)
	})
	return ro
}

func histories(t *testing.T, c client.Client, ns string) []rolloutsv1alpha1.RolloutHistory {
	t.Helper()
	list := &rolloutsv1alpha1.RolloutHistoryList{}
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}
