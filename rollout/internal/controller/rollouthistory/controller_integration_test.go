package rollouthistory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/rollouthistory"
)

const replicas = 3

func webDeployment(ns, rolloutID string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/web:v1"}}},
			},
		},
	}
	if rolloutID != "" {
		d.Annotations = map[string]string{rolloutsv1beta1.RolloutIDLabel: rolloutID}
	}
	return d
}

// webRollout releases the Deployment in two steps: one pod (no pause), then all of them.
func webRollout(ns string) *rolloutsv1beta1.Rollout {
	one, all := intstr.FromInt32(1), intstr.FromString("100%")
	return &rolloutsv1beta1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{Steps: []rolloutsv1beta1.CanaryStep{
				{Replicas: &one, Pause: rolloutsv1beta1.RolloutPause{Duration: ptr.To[int32](0)}},
				{Replicas: &all},
			}}},
		},
	}
}

// setup starts the controllers, creates the Deployment and its Rollout and waits until both settle.
func setup(t *testing.T, rolloutID string) (client.Client, string) {
	t.Helper()
	c := startEngine(t)
	ns := namespace(t, c)
	if err := c.Create(context.Background(), webDeployment(ns, rolloutID)); err != nil {
		t.Fatal(err)
	}
	waitDeployment(t, c, ns)
	if err := c.Create(context.Background(), webRollout(ns)); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, c, ns)
	return c, ns
}

// stableHash is the pod-template-hash of the Deployment's only active ReplicaSet.
func stableHash(t *testing.T, c client.Client, ns string) string {
	t.Helper()
	list := &appsv1.ReplicaSetList{}
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, rs := range list.Items {
		if rs.Spec.Replicas != nil && *rs.Spec.Replicas > 0 {
			return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
	}
	t.Fatal("no active ReplicaSet")
	return ""
}

// release changes the image the way a user does and freezes the Deployment the way the workload webhook
// does; a non-empty rolloutID is the new release's id.
func release(t *testing.T, c client.Client, ns, image, rolloutID string) {
	t.Helper()
	annotations := map[string]string{rolloutsv1beta1.InProgressingAnnotation: `{"rolloutName":"web"}`}
	if rolloutID != "" {
		annotations[rolloutsv1beta1.RolloutIDLabel] = rolloutID
	}
	patch := map[string]any{
		"metadata": map[string]any{
			"annotations": annotations,
			"labels":      map[string]string{rolloutsv1beta1.DeploymentStableRevisionLabel: stableHash(t, c, ns)},
		},
		"spec": map[string]any{
			"paused":   true,
			"template": map[string]any{"spec": map[string]any{"containers": []map[string]any{{"name": "app", "image": image}}}},
		},
	}
	raw, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	if err := c.Patch(context.Background(), d, client.RawPatch("application/strategic-merge-patch+json", raw)); err != nil {
		t.Fatal(err)
	}
}

// waitReleased waits until the release succeeded and every pod runs the new template.
func waitReleased(t *testing.T, c client.Client, ns string) {
	t.Helper()
	eventually(t, "release succeeded", func() (bool, string) {
		ro := &rolloutsv1beta1.Rollout{}
		getWeb(t, c, ns, ro)
		succeeded := false
		for _, cond := range ro.Status.Conditions {
			succeeded = succeeded || (cond.Type == rolloutsv1beta1.RolloutConditionSucceeded && cond.Status == corev1.ConditionTrue)
		}
		return ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy && succeeded, describe(ro)
	})
	d := waitDeployment(t, c, ns)
	if d.Spec.Template.Spec.Containers[0].Image != "example.com/web:v2" || d.Spec.Paused {
		t.Fatalf("deployment after the release: image %s paused %v", d.Spec.Template.Spec.Containers[0].Image, d.Spec.Paused)
	}
}

// waitCompleted waits for the only history of the namespace to be completed.
func waitCompleted(t *testing.T, c client.Client, ns string) rolloutsv1alpha1.RolloutHistory {
	t.Helper()
	var h rolloutsv1alpha1.RolloutHistory
	eventually(t, "history completed", func() (bool, string) {
		items := histories(t, c, ns)
		if len(items) != 1 {
			return false, fmt.Sprintf("%d histories", len(items))
		}
		h = items[0]
		return h.Status.Phase == rolloutsv1alpha1.RolloutHistoryPhaseCompleted, fmt.Sprintf("history %s phase %q", h.Name, h.Status.Phase)
	})
	return h
}

// batchPods are the pods the BatchRelease labelled with a release and batch, as the history lists them.
func batchPods(t *testing.T, c client.Client, ns, rolloutID, batch string) []rolloutsv1alpha1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	sel := client.MatchingLabels{rolloutsv1beta1.RolloutIDLabel: rolloutID, rolloutsv1beta1.RolloutBatchIDLabel: batch}
	if err := c.List(context.Background(), list, client.InNamespace(ns), sel); err != nil {
		t.Fatal(err)
	}
	var out []rolloutsv1alpha1.Pod
	for _, p := range list.Items {
		out = append(out, rolloutsv1alpha1.Pod{Name: p.Name, IP: p.Status.PodIP, NodeName: p.Spec.NodeName})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// A release with a rollout-id is recorded once: snapshots when it starts, the pods of each step when it
// completes; the completed history is not changed afterwards.
func TestRecordsReleaseWithRolloutID(t *testing.T) {
	c, ns := setup(t, "v1")
	if n := len(histories(t, c, ns)); n != 0 {
		t.Fatalf("%d histories before any release", n)
	}
	release(t, c, ns, "example.com/web:v2", "v2")
	waitReleased(t, c, ns)
	h := waitCompleted(t, c, ns)

	checkMeta(t, c, ns, &h)
	checkSpec(t, &h)
	want := rolloutsv1alpha1.RolloutHistoryStatus{
		Phase: rolloutsv1alpha1.RolloutHistoryPhaseCompleted,
		CanarySteps: []rolloutsv1alpha1.CanaryStepInfo{
			{CanaryStepIndex: 1, Pods: batchPods(t, c, ns, "v2", "1")},
			{CanaryStepIndex: 2, Pods: batchPods(t, c, ns, "v2", "2")},
		},
	}
	if diff := cmp.Diff(want, h.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	checkPods(t, h.Status.CanarySteps)
	expectEvent(t, c, ns, rollouthistory.ReasonCreated)
	expectEvent(t, c, ns, rollouthistory.ReasonCompleted)
	checkUnchanged(t, c, ns, h)
}

func checkMeta(t *testing.T, c client.Client, ns string, h *rolloutsv1alpha1.RolloutHistory) {
	t.Helper()
	if !regexp.MustCompile(`^web-[a-z0-9]{6}$`).MatchString(h.Name) {
		t.Errorf("name = %q, want web-<6 lowercase alphanumerics>", h.Name)
	}
	wantLabels := map[string]string{rolloutsv1beta1.RolloutIDLabel: "v2", rolloutsv1beta1.RolloutNameLabel: "web"}
	if diff := cmp.Diff(wantLabels, h.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	ro := &rolloutsv1beta1.Rollout{}
	getWeb(t, c, ns, ro)
	if ref := metav1.GetControllerOf(h); ref == nil || ref.UID != ro.UID || ref.Kind != "Rollout" {
		t.Errorf("controller = %+v, want the Rollout", ref)
	}
}

func checkSpec(t *testing.T, h *rolloutsv1alpha1.RolloutHistory) {
	t.Helper()
	spec := h.Spec
	if spec.Rollout.RolloutID != "v2" || spec.Rollout.Name != "web" {
		t.Errorf("spec.rollout = %s %s", spec.Rollout.RolloutID, spec.Rollout.Name)
	}
	var roSpec rolloutsv1beta1.RolloutSpec
	if err := json.Unmarshal(spec.Rollout.Data.Raw, &roSpec); err != nil {
		t.Fatalf("spec.rollout.data: %v", err)
	}
	if diff := cmp.Diff(webRollout("").Spec.Strategy.Canary.Steps, roSpec.Strategy.Canary.Steps); diff != "" || roSpec.WorkloadRef.Name != "web" {
		t.Errorf("spec.rollout.data %s; steps (-want +got):\n%s", spec.Rollout.Data.Raw, diff)
	}
	if spec.Workload.APIVersion != "apps/v1" || spec.Workload.Kind != "Deployment" || spec.Workload.Name != "web" {
		t.Errorf("spec.workload = %+v", spec.Workload.TypeMeta)
	}
	var dSpec appsv1.DeploymentSpec
	if err := json.Unmarshal(spec.Workload.Data.Raw, &dSpec); err != nil {
		t.Fatalf("spec.workload.data: %v", err)
	}
	if img := dSpec.Template.Spec.Containers; len(img) != 1 || img[0].Image != "example.com/web:v2" || ptr.Deref(dSpec.Replicas, 0) != replicas {
		t.Errorf("spec.workload.data = %s", spec.Workload.Data.Raw)
	}
	if spec.Service.Name != "" || spec.TrafficRouting.IngressRef != nil || spec.TrafficRouting.HTTPRouteRef != nil {
		t.Errorf("traffic objects recorded for a Rollout without traffic routing: %+v %+v", spec.Service, spec.TrafficRouting)
	}
}

// checkPods checks that the steps list every pod of the release once: one in the first step, the rest in
// the second, each with its node and address.
func checkPods(t *testing.T, steps []rolloutsv1alpha1.CanaryStepInfo) {
	t.Helper()
	if len(steps) != 2 || len(steps[0].Pods) != 1 || len(steps[1].Pods) != replicas-1 {
		t.Fatalf("pods per step = %+v, want 1 and %d", steps, replicas-1)
	}
	for _, s := range steps {
		for _, p := range s.Pods {
			if p.NodeName == "" || p.IP == "" {
				t.Errorf("step %d pod %+v lacks its node or address", s.CanaryStepIndex, p)
			}
		}
	}
}

// checkUnchanged touches the Rollout and the released pods and checks the completed history stays as it is.
func checkUnchanged(t *testing.T, c client.Client, ns string, h rolloutsv1alpha1.RolloutHistory) {
	t.Helper()
	ro := &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	if err := c.Patch(context.Background(), ro, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"touch":"1"}}}`))); err != nil {
		t.Fatal(err)
	}
	first := h.Status.CanarySteps[0].Pods[0].Name
	if err := c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: first, Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	waitDeployment(t, c, ns)
	time.Sleep(2 * time.Second) // give a wrong reconcile time to write
	items := histories(t, c, ns)
	if len(items) != 1 || items[0].ResourceVersion != h.ResourceVersion {
		t.Errorf("completed history changed: %d histories, resourceVersion %s → %s", len(items), h.ResourceVersion, items[0].ResourceVersion)
	}
}

// A release whose workload carries no rollout-id is not recorded.
func TestIgnoresReleaseWithoutRolloutID(t *testing.T) {
	c, ns := setup(t, "")
	release(t, c, ns, "example.com/web:v2", "")
	eventually(t, "release started", func() (bool, string) {
		ro := &rolloutsv1beta1.Rollout{}
		getWeb(t, c, ns, ro)
		// A release without pauses may be over between two polls; the Succeeded condition, which only the end
		// of a release writes (setup's Rollout has none), says it ran.
		ended := false
		for _, cond := range ro.Status.Conditions {
			ended = ended || cond.Type == rolloutsv1beta1.RolloutConditionSucceeded
		}
		return ro.Status.Phase == rolloutsv1beta1.RolloutPhaseProgressing || ended, describe(ro)
	})
	waitReleased(t, c, ns)
	time.Sleep(2 * time.Second) // give a wrong reconcile time to write
	if items := histories(t, c, ns); len(items) != 0 {
		t.Errorf("%d histories recorded for a release without a rollout-id, first %s", len(items), items[0].Name)
	}
}

func expectEvent(t *testing.T, c client.Client, ns, reason string) {
	t.Helper()
	eventually(t, "event "+reason, func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Reason == reason && e.ReportingController == rollouthistory.ControllerName {
				return e.Regarding.Kind == "Rollout" && e.Related != nil && e.Related.Kind == "RolloutHistory", fmt.Sprintf("%+v", e)
			}
			seen = append(seen, e.Reason)
		}
		return false, strings.Join(seen, ", ")
	})
}
