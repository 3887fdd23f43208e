package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// expect runs the binary and checks its exit code and output.
func expect(t *testing.T, wantCode int, wantOut, wantErr string, args ...string) result {
	t.Helper()
	r := kruise(t, args...)
	if r.code != wantCode || (wantOut != "" && r.stdout != wantOut) || (wantErr != "" && r.stderr != wantErr) {
		t.Fatalf("%s: exit %d, stdout %q, stderr %q; want %d, %q, %q", strings.Join(args, " "), r.code, r.stdout, r.stderr, wantCode, wantOut, wantErr)
	}
	return r
}

func TestPauseResumeWorkloads(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	cs := createCloneSet(t, ns, "web", "nginx:1")
	asts := createAdvancedStatefulSet(t, ns, "db")
	ads := createAdvancedDaemonSet(t, ns, "agent")
	deploy := createDeployment(t, ns, "api", false)
	createStatefulSet(t, ns, "native")

	expect(t, 0, "cloneset.apps.kruise.io/web paused\nstatefulset.apps.kruise.io/db paused\ndaemonset.apps.kruise.io/agent paused\ndeployment.apps/api paused\n", "",
		"rollout", "pause", "cs/web", "asts/db", "ads/agent", "deploy/api", "-n", ns)
	if !get(t, cs).Spec.UpdateStrategy.Paused || !get(t, asts).Spec.UpdateStrategy.RollingUpdate.Paused ||
		!ptr.Deref(get(t, ads).Spec.UpdateStrategy.RollingUpdate.Paused, false) || !get(t, deploy).Spec.Paused {
		t.Fatal("not every workload is paused")
	}
	expect(t, 1, "", "error: clonesets.apps.kruise.io \"web\" is already paused\n", "rollout", "pause", "cloneset", "web", "-n", ns)
	expect(t, 1, "", "error: statefulsets.apps \"native\" pausing is not supported\n", "rollout", "pause", "sts/native", "-n", ns)

	expect(t, 0, "cloneset.apps.kruise.io/web resumed\nstatefulset.apps.kruise.io/db resumed\n", "",
		"rollout", "resume", "clonesets.apps.kruise.io/web", "statefulset.apps.kruise.io/db", "-n", ns)
	if get(t, cs).Spec.UpdateStrategy.Paused || get(t, asts).Spec.UpdateStrategy.RollingUpdate.Paused {
		t.Fatal("not resumed")
	}
	expect(t, 1, "", "error: clonesets.apps.kruise.io \"web\" is not paused\n", "rollout", "resume", "cloneset/web", "-n", ns)
}

func TestRestart(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	cs := createCloneSet(t, ns, "web", "nginx:1")
	deploy := createDeployment(t, ns, "api", false)
	createDeployment(t, ns, "paused", true)

	expect(t, 0, "cloneset.apps.kruise.io/web restarted\ndeployment.apps/api restarted\n", "", "rollout", "restart", "cloneset/web", "deployment/api", "-n", ns)
	spec := get(t, cs).Spec.Template.Spec
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		last := c.Env[len(c.Env)-1]
		if last.Name != "RESTARTED_AT" || !isRecent(last.Value) {
			t.Errorf("container %s env = %v, want RESTARTED_AT set to now", c.Name, c.Env)
		}
	}
	if at := get(t, cs).Spec.Template.Annotations["kubectl.kruise.io/restartedAt"]; !isRecent(at) {
		t.Errorf("cloneset restartedAt annotation = %q", at)
	}
	if got := envOf(spec, "web"); len(got) != 2 || got[0] != (corev1.EnvVar{Name: "A", Value: "1"}) {
		t.Errorf("web env = %v, want A kept", got)
	}
	if at := get(t, deploy).Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]; !isRecent(at) {
		t.Errorf("restartedAt annotation = %q", at)
	}
	expect(t, 1, "", "error: deployments.apps \"paused\" can't restart paused deployment (run rollout resume first)\n",
		"rollout", "restart", "deploy/paused", "-n", ns)
}

func isRecent(stamp string) bool {
	at, err := time.Parse(time.RFC3339, stamp)
	return err == nil && time.Since(at) < time.Minute
}

func TestSetImageEnvResources(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	cs := createCloneSet(t, ns, "web", "nginx:1")
	asts := createAdvancedStatefulSet(t, ns, "db")

	expect(t, 0, "cloneset.apps.kruise.io/web image updated\n", "", "set", "image", "cloneset/web", "web=nginx:2", "init=busybox:2", "-n", ns)
	want := map[string]string{"init": "busybox:2", "web": "nginx:2", "sidecar": "envoy:1"}
	if diff := cmp.Diff(want, images(get(t, cs).Spec.Template.Spec)); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
	expect(t, 0, "statefulset.apps.kruise.io/db image updated\n", "", "set", "image", "asts", "db", "*=nginx:3", "-n", ns)
	if diff := cmp.Diff(map[string]string{"init": "nginx:3", "web": "nginx:3", "sidecar": "nginx:3"}, images(get(t, asts).Spec.Template.Spec)); diff != "" {
		t.Errorf("asts images (-want +got):\n%s", diff)
	}
	expect(t, 1, "", "error: clonesets.apps.kruise.io \"web\" unable to find container named \"db\"\n", "set", "image", "cs/web", "db=pg:1", "-n", ns)

	expect(t, 0, "cloneset.apps.kruise.io/web env updated\n", "", "set", "env", "cs/web", "-c", "web", "B=2", "A-", "-n", ns)
	if got := envOf(get(t, cs).Spec.Template.Spec, "web"); !cmp.Equal(got, []corev1.EnvVar{{Name: "B", Value: "2"}}) {
		t.Errorf("web env = %v", got)
	}
	expect(t, 1, "", "error: clonesets.apps.kruise.io \"web\" 'B' already has a value (2), and --overwrite is false\n",
		"set", "env", "cs/web", "-c", "web", "--overwrite=false", "B=3", "-n", ns)
	r := expect(t, 0, "", "", "set", "env", "cs/web", "--list", "-c", "web", "-n", ns)
	if r.stdout != "# clonesets web, container web\nB=2\n" {
		t.Errorf("--list printed %q", r.stdout)
	}

	expect(t, 0, "cloneset.apps.kruise.io/web resource requirements updated\n", "",
		"set", "resources", "cloneset/web", "-c=web", "--limits=cpu=200m,memory=512Mi", "--requests=cpu=100m", "-n", ns)
	got := get(t, cs).Spec.Template.Spec.Containers[0].Resources
	wantRes := corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
	}
	if !cmp.Equal(got, wantRes) {
		t.Errorf("resources = %v", got)
	}
}

func TestSetEnvFromSecret(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	cs := createCloneSet(t, ns, "web", "nginx:1")
	create(t, &corev1.Secret{ObjectMeta: objectMeta(ns, "creds"), StringData: map[string]string{"db.user": "u", "db-pass": "p"}})
	expect(t, 0, "cloneset.apps.kruise.io/web env updated\n", "", "set", "env", "cs/web", "-c", "web", "--from=secret/creds", "--keys=db-pass", "--prefix=APP_", "-n", ns)
	env := envOf(get(t, cs).Spec.Template.Spec, "web")
	want := corev1.EnvVar{Name: "APP_DB_PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "db-pass"}}}
	if len(env) != 2 || !cmp.Equal(env[1], want) {
		t.Errorf("env = %v", env)
	}
}

func TestDryRun(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	cs := createCloneSet(t, ns, "web", "nginx:1")
	expect(t, 0, "cloneset.apps.kruise.io/web image updated (server dry run)\n", "", "set", "image", "cs/web", "web=nginx:2", "--dry-run=server", "-n", ns)
	r := expect(t, 0, "", "", "set", "image", "cs/web", "web=nginx:9", "--dry-run=client", "-o", "yaml", "-n", ns)
	if !strings.Contains(r.stdout, "image: nginx:9") {
		t.Errorf("client dry run printed:\n%s", r.stdout)
	}
	if got := images(get(t, cs).Spec.Template.Spec)["web"]; got != "nginx:1" {
		t.Errorf("a dry run changed the image to %s", got)
	}
	expect(t, 1, "", "error: --dry-run flag without a value was specified. A value must be set: \"none\", \"server\", or \"client\"\n",
		"set", "image", "cs/web", "web=nginx:2", "--dry-run", "-n", ns)
}

func TestScale(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	cs := createCloneSet(t, ns, "web", "nginx:1")
	asts := createAdvancedStatefulSet(t, ns, "db")
	createAdvancedDaemonSet(t, ns, "agent")

	expect(t, 0, "cloneset.apps.kruise.io/web scaled\nstatefulset.apps.kruise.io/db scaled\n", "", "scale", "--replicas=2", "cs/web", "asts/db", "-n", ns)
	if *get(t, cs).Spec.Replicas != 2 || *get(t, asts).Spec.Replicas != 2 {
		t.Fatal("not scaled")
	}
	expect(t, 1, "", "error: clonesets.apps.kruise.io \"web\" expected replicas to be 5, was 2\n",
		"scale", "--replicas=4", "--current-replicas=5", "cloneset/web", "-n", ns)
	expect(t, 0, "cloneset.apps.kruise.io/web scaled\n", "", "scale", "--replicas=4", "--current-replicas=2", "cloneset/web", "-n", ns)
	if *get(t, cs).Spec.Replicas != 4 {
		t.Error("not scaled with a met precondition")
	}
	expect(t, 1, "", "error: daemonsets.apps.kruise.io \"agent\" cannot be scaled: it has no scale subresource\n", "scale", "--replicas=1", "ads/agent", "-n", ns)
}

func TestScaleDown(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	cs := createCloneSet(t, ns, "web", "nginx:1")
	owner := ownerRef(cs, "apps.kruise.io/v1alpha1", "CloneSet")
	createPod(t, ns, "web-a", owner, nil)
	createPod(t, ns, "web-b", owner, nil)
	createPod(t, ns, "stranger", nil, nil)

	expect(t, 0, "# web delete pods [web-a web-b] successfully\ncloneset.apps.kruise.io/web selective pod deletion\n", "",
		"scaledown", "cloneset/web", "--pods", "web-a, web-b", "-n", ns)
	got := get(t, cs)
	if *got.Spec.Replicas != 3 || !cmp.Equal(got.Spec.ScaleStrategy.PodsToDelete, []string{"web-a", "web-b"}) {
		t.Errorf("replicas %d, podsToDelete %v", *got.Spec.Replicas, got.Spec.ScaleStrategy.PodsToDelete)
	}
	expect(t, 1, "", "error: pod \"stranger\" is not a pod of cloneset \"web\"\n", "scaledown", "cloneset/web", "--pods=stranger", "-n", ns)
	expect(t, 1, "", "error: pods \"missing\" not found\n", "scaledown", "cloneset/web", "--pods=missing", "-n", ns)
	if *get(t, cs).Spec.Replicas != 3 {
		t.Error("a refused scaledown changed the replicas")
	}
}

func TestHistoryAndUndoCloneSet(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	cs := createCloneSet(t, ns, "web", "nginx:2")
	createRevision(t, cs, 1, webTemplate("nginx:1"), "")
	createRevision(t, cs, 2, webTemplate("nginx:2"), "kubectl-kruise set image web=nginx:2")
	other := createCloneSet(t, ns, "other", "nginx:1")
	createRevision(t, other, 7, webTemplate("nginx:7"), "")

	expect(t, 0, "cloneset.apps.kruise.io/web \nREVISION  CHANGE-CAUSE\n1         <none>\n2         kubectl-kruise set image web=nginx:2\n\n", "",
		"rollout", "history", "cloneset/web", "-n", ns)
	r := expect(t, 0, "", "", "rollout", "history", "cloneset/web", "--revision=1", "-n", ns)
	if !strings.HasPrefix(r.stdout, "cloneset.apps.kruise.io/web with revision #1\nPod Template:\n") || !strings.Contains(r.stdout, "Image:        nginx:1") {
		t.Errorf("revision 1:\n%s", r.stdout)
	}
	expect(t, 1, "", "error: unable to find the specified revision\n", "rollout", "history", "cloneset/web", "--revision=5", "-n", ns)

	expect(t, 0, "cloneset.apps.kruise.io/web rolled back\n", "", "rollout", "undo", "cloneset/web", "-n", ns)
	if got := get(t, cs).Spec.Template; !cmp.Equal(got, webTemplate("nginx:1")) {
		t.Errorf("template after undo = %+v", got)
	}
	expect(t, 0, "cloneset.apps.kruise.io/web skipped rollback (current template already matches revision 1)\n", "",
		"rollout", "undo", "cloneset/web", "--to-revision=1", "-n", ns)
	expect(t, 1, "", "error: clonesets.apps.kruise.io \"web\" unable to find specified revision 9 in history\n",
		"rollout", "undo", "cloneset/web", "--to-revision=9", "-n", ns)
	expect(t, 0, "cloneset.apps.kruise.io/web rolled back (server dry run)\n", "", "rollout", "undo", "cs/web", "--to-revision=2", "--dry-run=server", "-n", ns)
	if got := images(get(t, cs).Spec.Template.Spec)["web"]; got != "nginx:1" {
		t.Errorf("a dry run rolled back to %s", got)
	}
}

// TestUndoThroughRollout rolls back the CloneSet a Rollout references, and drops a template field
// added after the revision.
func TestUndoThroughRollout(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	cs := createCloneSet(t, ns, "web", "nginx:1")
	createRevision(t, cs, 1, webTemplate("nginx:1"), "")
	cs = get(t, cs)
	cs.Spec.Template = webTemplate("nginx:2")
	cs.Spec.Template.Annotations = map[string]string{"added": "later"}
	if err := k8s.Update(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	createRevision(t, cs, 2, cs.Spec.Template, "")
	ro := &rolloutsv1beta1.Rollout{
		ObjectMeta: objectMeta(ns, "demo"),
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
			Strategy:    rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{Steps: []rolloutsv1beta1.CanaryStep{{Replicas: ptr.To(intOrPercent("100%"))}}}},
		},
	}
	create(t, ro)
	expect(t, 0, "cloneset.apps.kruise.io/web rolled back\n", "", "rollout", "undo", "rollout/demo", "cloneset/web", "-n", ns)
	if got := get(t, cs).Spec.Template; !cmp.Equal(got, webTemplate("nginx:1")) {
		t.Errorf("template after undo = %+v", got)
	}
}

func TestHistoryAndUndoDeployment(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	d := createDeployment(t, ns, "api", false)
	d = get(t, d)
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "2", "note": "current"}
	if err := k8s.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	createReplicaSet(t, d, "aaa", "1", webTemplate("nginx:0"), map[string]string{"note": "first", "kubernetes.io/change-cause": "v0"})
	createReplicaSet(t, d, "bbb", "2", webTemplate("nginx:1"), nil)

	expect(t, 0, "deployment.apps/api \nREVISION  CHANGE-CAUSE\n1         v0\n2         <none>\n\n", "", "rollout", "history", "deploy/api", "-n", ns)
	expect(t, 0, "deployment.apps/api rolled back\n", "", "rollout", "undo", "deploy/api", "-n", ns)
	got := get(t, d)
	if images(got.Spec.Template.Spec)["web"] != "nginx:0" || got.Spec.Template.Labels["pod-template-hash"] != "" {
		t.Errorf("template after undo = %+v", got.Spec.Template)
	}
	want := map[string]string{"deployment.kubernetes.io/revision": "2", "note": "first", "kubernetes.io/change-cause": "v0"}
	if diff := cmp.Diff(want, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}

	got.Spec.Paused = true
	if err := k8s.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	expect(t, 1, "", "error: deployments.apps \"api\" you cannot rollback a paused deployment; resume it first with 'kubectl-kruise rollout resume deployment/api' and try again\n",
		"rollout", "undo", "deploy/api", "--to-revision=2", "-n", ns)
}

func TestUndoFastAndRollback(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	bg := createRollout(t, ns, "bg", true)
	setStep(t, bg, 2, rolloutsv1beta1.CanaryStepStatePaused)
	expect(t, 0, "rollout.rollouts.kruise.io/bg rolled back\n", "", "rollout", "undo", "rollout/bg", "--fast", "-n", ns)
	if got := getRollout(t, ns, "bg").Status.BlueGreenStatus.NextStepIndex; got != 1 {
		t.Errorf("blueGreenStatus.nextStepIndex = %d, want 1", got)
	}
	expect(t, 0, "rollout.rollouts.kruise.io/bg already rolled back\n", "", "rollout", "undo", "rollout/bg", "--fast", "-n", ns)

	canary := createRollout(t, ns, "canary", false)
	setStep(t, canary, 3, rolloutsv1beta1.CanaryStepStatePaused)
	expect(t, 0, "rollout.rollouts.kruise.io/canary rolled back\n", "", "rollout", "rollback", "rollout/canary", "--step", "1", "-n", ns)
	if got := getRollout(t, ns, "canary").Status.CanaryStatus.NextStepIndex; got != 1 {
		t.Errorf("canaryStatus.nextStepIndex = %d, want 1", got)
	}
	setStep(t, canary, 1, rolloutsv1beta1.CanaryStepStatePaused)
	expect(t, 1, "", "error: rollouts.rollouts.kruise.io \"canary\" already at the first step, use kubectl-kruise rollout undo to cancel the release\n",
		"rollout", "undo", "rollout/canary", "--fast", "-n", ns)
}

func TestDescribeRollout(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	cs := createCloneSet(t, ns, "web", "nginx:2")
	cs.Status = kruiseappsv1alpha1.CloneSetStatus{Replicas: 5, UpdatedReplicas: 1, ReadyReplicas: 5, AvailableReplicas: 5}
	if err := k8s.Status().Update(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	owner := ownerRef(cs, "apps.kruise.io/v1alpha1", "CloneSet")
	createPod(t, ns, "web-new", owner, map[string]string{"app": "web", "controller-revision-hash": "rev2", "rollouts.kruise.io/rollout-batch-id": "1"})
	createPod(t, ns, "web-old", owner, map[string]string{"app": "web", "controller-revision-hash": "rev1"})
	ro := &rolloutsv1beta1.Rollout{
		ObjectMeta: objectMeta(ns, "demo"),
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
			Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{Steps: []rolloutsv1beta1.CanaryStep{
				{Replicas: ptr.To(intOrPercent("20%"))}, {Replicas: ptr.To(intOrPercent("100%"))},
			}}},
		},
	}
	create(t, ro)
	setStep(t, ro, 1, rolloutsv1beta1.CanaryStepStatePaused, rolloutsv1beta1.RolloutCondition{
		Type: rolloutsv1beta1.RolloutConditionProgressing, Status: corev1.ConditionTrue, Reason: "InRolling", Message: "waiting"})

	r := expect(t, 0, "", "", "describe", "rollout", "demo", "-n", ns)
	for _, want := range []string{
		"Name:              demo\n", "Strategy:          Canary (partition)\n", " Step:             1/2\n",
		"     State:        StepPaused (waiting for approval) (current step)\n", "Workload:          CloneSet web (apps.kruise.io/v1alpha1)\n",
		"Images:            nginx:2\n", " Updated:          1\n", "  Progressing  True    InRolling  waiting\n", "web-new  0/1    1         rev2",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("describe lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "web-old") {
		t.Errorf("describe shows a pod outside the batch:\n%s", r.stdout)
	}
	if r := expect(t, 0, "", "", "describe", "rollout", "rollout/demo", "--all", "-n", ns); !strings.Contains(r.stdout, "web-old") {
		t.Errorf("--all does not show every pod:\n%s", r.stdout)
	}
	expect(t, 1, "", "error: rollouts.rollouts.kruise.io \"missing\" not found\n", "describe", "rollout", "missing", "-n", ns)
}
