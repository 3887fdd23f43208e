package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestMigrateCreateCopy(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	createDeployment(t, ns, "api", false)
	expect(t, 0, "cloneset.apps.kruise.io/web created from deployment.apps/api\n", "",
		"migrate", "CloneSet", "--from", "Deployment", "--src-name", "api", "--dst-name", "web", "--create", "--copy", "-n", ns)
	cs := get(t, &kruiseappsv1alpha1.CloneSet{ObjectMeta: objectMeta(ns, "web")})
	us := cs.Spec.UpdateStrategy
	if *cs.Spec.Replicas != 2 || !us.Paused || us.Type != kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType || cs.Spec.Template.Labels["app"] != "web" {
		t.Errorf("cloneset spec = %+v", cs.Spec)
	}
	expect(t, 1, "", "error: --copy needs --create\n", "migrate", "CloneSet", "--from", "Deployment", "--src-name", "api", "--dst-name", "web", "--copy", "-n", ns)
}

// TestMigrateReplicas moves every replica while the test plays the CloneSet controller: it reports the
// CloneSet's replicas available as soon as they are asked for.
func TestMigrateReplicas(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	d := createDeployment(t, ns, "api", false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := start(ctx, t, "migrate", "CloneSet", "--from", "Deployment", "--src-name", "api", "--dst-name", "web",
		"--create", "--timeout-seconds", "90", "-n", ns)
	cs := &kruiseappsv1alpha1.CloneSet{ObjectMeta: objectMeta(ns, "web")}
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline) && *get(t, d).Spec.Replicas > 0; time.Sleep(100 * time.Millisecond) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cs), cs); err != nil || cs.Status.AvailableReplicas == *cs.Spec.Replicas {
			continue
		}
		cs.Status = kruiseappsv1alpha1.CloneSetStatus{ObservedGeneration: cs.Generation, Replicas: *cs.Spec.Replicas,
			ReadyReplicas: *cs.Spec.Replicas, AvailableReplicas: *cs.Spec.Replicas}
		_ = k8s.Status().Update(ctx, cs)
	}
	r := p.wait(t)
	want := "cloneset.apps.kruise.io/web created from deployment.apps/api\n" +
		"clonesets.apps.kruise.io/web scaled to 1\ndeployments.apps/api scaled to 1\n" +
		"clonesets.apps.kruise.io/web scaled to 2\ndeployments.apps/api scaled to 0\n" +
		"migrated 2 replicas from deployment.apps/api to cloneset.apps.kruise.io/web\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", r.code, r.stderr, r.stdout)
	}
	if got := get(t, cs); *got.Spec.Replicas != 2 || got.Spec.UpdateStrategy.MaxSurge == nil ||
		*got.Spec.UpdateStrategy.MaxSurge != intstr.FromString("25%") {
		t.Errorf("cloneset spec = %+v", got.Spec)
	}
	if strings.Contains(r.stderr, "warning") {
		t.Errorf("stderr = %q", r.stderr)
	}
}
