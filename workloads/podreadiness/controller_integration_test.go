package podreadiness_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// cfg is nil when the tests run with -short: no control plane, pure tests only.
var cfg *rest.Config

func TestMain(m *testing.M) {
	// Pods need no node here: the controller writes status, which the API server accepts for any pod.
	os.Exit(managertest.Main(m, cluster.Options{CRDDirs: []string{}}, &cfg))
}

func TestControllerInitialisesTheCondition(t *testing.T) {
	c := startController(t)
	ns := namespace(t, c)
	ctx := context.Background()

	plain := newPod(ns, "plain")
	gated := newPod(ns, "gated")
	podreadiness.AddGate(gated)
	held := newPod(ns, "held")
	podreadiness.AddGate(held)
	for _, p := range []*corev1.Pod{plain, gated, held} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// A holder is kept, whether it came before the controller (AddNotReady then creates the condition False)
	// or after it.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(held), held); err != nil {
			return err
		}
		podreadiness.AddNotReady(held, "Lifecycle", "preDeleteHook", metav1.Now())
		return c.Status().Update(ctx, held)
	})
	if err != nil {
		t.Fatal(err)
	}

	eventually(t, "the gated pod's condition is True", func() (bool, string) {
		cond := condition(t, c, gated)
		return cond != nil && cond.Status == corev1.ConditionTrue && cond.Message == "", fmt.Sprintf("%+v", cond)
	})
	if cond := condition(t, c, held); cond == nil || cond.Status != corev1.ConditionFalse ||
		cond.Message != `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]` {
		t.Errorf("held pod's condition: %+v", cond)
	}
	if cond := condition(t, c, plain); cond != nil {
		t.Errorf("a pod without the gate got the condition: %+v", cond)
	}
}

// startController runs the controller in-process until the test ends and returns a direct client.
func startController(t *testing.T) client.Client {
	t.Helper()
	managertest.RequireCluster(t, cfg)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme)
	managertest.Start(t, cfg, scheme, func(mgr ctrl.Manager) error {
		// Several workload modules set it up; the second call must not fail on the controller's name.
		return errors.Join(podreadiness.SetupWithManager(mgr), podreadiness.SetupWithManager(mgr))
	})
	return managertest.DirectClient(t, cfg, scheme)
}

// namespace creates a namespace with the "default" ServiceAccount the ServiceAccount admission plugin wants;
// no controller manager runs to create it.
func namespace(t *testing.T, c client.Client) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "podreadiness-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func newPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "app", Image: "example.com/app:v1"}},
		},
	}
}

func condition(t *testing.T, c client.Client, pod *corev1.Pod) *corev1.PodCondition {
	t.Helper()
	got := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	for _, cond := range got.Status.Conditions {
		if cond.Type == pub.KruisePodReadyConditionType {
			return &cond
		}
	}
	return nil
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) {
			ok, msg := cond()
			last = msg
			return ok, nil
		})
	if err != nil {
		t.Fatalf("%s: not reached; last: %s", what, last)
	}
}
