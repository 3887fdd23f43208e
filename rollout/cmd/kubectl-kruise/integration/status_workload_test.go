package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// writeStatus stores obj's status as a controller would (no manager runs here).
func writeStatus(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Status().Update(context.Background(), obj); err != nil {
		t.Fatalf("writing the status of %s: %v", obj.GetName(), err)
	}
}

func TestStatusCloneSet(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	cs := createCloneSet(t, ns, "web", "nginx:1")
	expect(t, 4, "Waiting for CloneSet spec update to be observed...\n", "", "rollout", "status", "cloneset/web", "--watch=false", "-n", ns)

	cs = get(t, cs)
	cs.Status = kruiseappsv1alpha1.CloneSetStatus{ObservedGeneration: cs.Generation, Replicas: 5, ReadyReplicas: 5, UpdatedReplicas: 2, UpdateRevision: "web-2"}
	writeStatus(t, cs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := start(ctx, t, "rollout", "status", "clonesets/web", "-n", ns, "--timeout", "90s")
	eventually(t, "the first line", func() bool { return strings.Contains(p.stdout.String(), "2 pods") })
	cs.Status.UpdatedReplicas, cs.Status.AvailableReplicas = 5, 5
	writeStatus(t, cs)
	r := p.wait(t)
	want := "Waiting for CloneSet rolling update to complete 2 pods at revision web-2...\nCloneSet rolling update complete 5 pods at revision web-2...\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", r.code, r.stderr, r.stdout)
	}
}

func TestStatusAdvancedStatefulSetAndRefusals(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	sts := get(t, createAdvancedStatefulSet(t, ns, "store"))
	sts.Spec.UpdateStrategy.RollingUpdate.Paused = true
	if err := k8s.Update(context.Background(), sts); err != nil {
		t.Fatal(err)
	}
	sts.Status = kruiseappsv1beta1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 1, UpdateRevision: "store-2", CurrentRevision: "store-1"}
	writeStatus(t, sts)
	paused := "Waiting for statefulset rolling update to complete 1 pods at revision store-2... (the update is paused)\n"
	expect(t, 3, paused, "", "rollout", "status", "asts/store", "-n", ns)
	expect(t, 0, paused, "", "rollout", "status", "asts", "store", "-n", ns, "--success-on-pause")

	createAdvancedDaemonSet(t, ns, "agent")
	expect(t, 1, "", "error: daemonsets.apps.kruise.io \"agent\": no status viewer has been implemented for daemonsets.apps.kruise.io\n",
		"rollout", "status", "ads/agent", "-n", ns)
	expect(t, 1, "", "error: clonesets.apps.kruise.io \"missing\" not found\n", "rollout", "status", "cloneset/missing", "-n", ns)
	expect(t, 1, "", "error: rollout status takes a single resource, got 2\n", "rollout", "status", "cloneset/a", "cloneset/b", "-n", ns)
}
