package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

func newCloneSet(ns, name string, replicas int32, image string, mutate ...func(*kruiseappsv1alpha1.CloneSet)) *kruiseappsv1alpha1.CloneSet {
	cs := &kruiseappsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kruiseappsv1alpha1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
			},
		},
	}
	for _, m := range mutate {
		m(cs)
	}
	podtemplate.Default(&cs.Spec.Template)
	return cs
}

func inPlace(cs *kruiseappsv1alpha1.CloneSet) {
	cs.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	managertest.Create(t, c, obj)
}

// update re-reads the CloneSet and applies change to it.
func update(t *testing.T, c client.Client, cs *kruiseappsv1alpha1.CloneSet, change func(*kruiseappsv1alpha1.CloneSet)) {
	t.Helper()
	managertest.Update(t, c, cs, change)
}

func pods(ctx context.Context, c client.Client, cs *kruiseappsv1alpha1.CloneSet) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	err := c.List(ctx, list, client.InNamespace(cs.Namespace), client.MatchingLabels(cs.Spec.Selector.MatchLabels))
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, err
}

// settled waits until the CloneSet reports every pod updated and available at the current generation,
// and returns its pods.
func settled(t *testing.T, c client.Client, cs *kruiseappsv1alpha1.CloneSet, updated int32) []corev1.Pod {
	t.Helper()
	var out []corev1.Pod
	eventually(t, fmt.Sprintf("CloneSet %s with %d updated available pods", cs.Name, updated), func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cs), cs); err != nil {
			return false, err
		}
		s, replicas := cs.Status, *cs.Spec.Replicas
		var err error
		out, err = pods(ctx, c, cs)
		return s.ObservedGeneration == cs.Generation && s.Replicas == replicas && s.AvailableReplicas == replicas &&
			s.UpdatedAvailableReplicas == updated && int32(len(out)) == replicas, err
	})
	return out
}

func identities(ps []corev1.Pod) map[string]types.UID {
	out := map[string]types.UID{}
	for _, p := range ps {
		out[p.Name] = p.UID
	}
	return out
}

func eventReasons(t *testing.T, c client.Client, cs *kruiseappsv1alpha1.CloneSet) map[string][]string {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := c.List(t.Context(), list, client.InNamespace(cs.Namespace)); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range list.Items {
		if e.Regarding.Name == cs.Name && e.Regarding.Kind == "CloneSet" {
			out[e.Reason] = append(out[e.Reason], e.Note)
		}
	}
	return out
}

// waitEvents waits until the CloneSet has n events of reason. The recorder stores events in the background, apart
// from the writes they tell of: an event may reach the apiserver after the state the test waited for.
func waitEvents(t *testing.T, c client.Client, cs *kruiseappsv1alpha1.CloneSet, reason string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d %s events", n, reason), func(context.Context) (bool, error) {
		got := eventReasons(t, c, cs)[reason]
		return len(got) == n, fmt.Errorf("%d %s events: %q", len(got), reason, got)
	})
}

func TestCreateLabelsPodsAndReportsStatus(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "web", 3, "nginx:1")
	create(t, c, cs)
	got := settled(t, c, cs, 3)
	if cs.Status.UpdateRevision == "" || cs.Status.CurrentRevision != cs.Status.UpdateRevision ||
		cs.Status.ExpectedUpdatedReplicas != 3 || cs.Status.LabelSelector != "app=web" {
		t.Fatalf("status = %+v", cs.Status)
	}
	hash := cs.Status.UpdateRevision[strings.LastIndex(cs.Status.UpdateRevision, "-")+1:]
	for _, p := range got {
		id := p.Labels[kruiseappsv1alpha1.CloneSetInstanceID]
		if p.Name != "web-"+id || len(id) != 5 || p.Labels["controller-revision-hash"] != cs.Status.UpdateRevision ||
			p.Labels["pod-template-hash"] != hash || p.Labels[kruiseappspub.LifecycleStateKey] != "Normal" {
			t.Fatalf("pod %s labels = %v", p.Name, p.Labels)
		}
		gates := []corev1.PodConditionType{}
		for _, g := range p.Spec.ReadinessGates {
			gates = append(gates, g.ConditionType)
		}
		if !slices.Contains(gates, kruiseappspub.InPlaceUpdateReady) || !slices.Contains(gates, kruiseappspub.KruisePodReadyConditionType) {
			t.Fatalf("pod %s readiness gates = %v", p.Name, gates)
		}
	}
	waitEvents(t, c, cs, "SuccessfulCreate", 3)
	// Without hooks a new pod's state and its gates' conditions go in one pods/status write.
	for _, p := range got {
		if !settledInOneWrite(p) {
			t.Fatalf("pod %s has its lifecycle state and readiness conditions from separate writes: %+v", p.Name, p.ManagedFields)
		}
	}
}

// settledInOneWrite reports whether one pods/status write set both the lifecycle state label and the
// InPlaceUpdateReady condition, as its managed fields tell.
func settledInOneWrite(p corev1.Pod) bool {
	return slices.ContainsFunc(p.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
		fields := ""
		if m.FieldsV1 != nil {
			fields = m.FieldsV1.GetRawString()
		}
		return m.Subresource == "status" && strings.Contains(fields, `"f:`+kruiseappspub.LifecycleStateKey+`"`) &&
			strings.Contains(fields, `"k:{\"type\":\"`+string(kruiseappspub.InPlaceUpdateReady)+`\"}"`)
	})
}

func TestInPlaceUpdateKeepsPods(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "inplace", 3, "nginx:1", inPlace)
	create(t, c, cs)
	before := identities(settled(t, c, cs, 3))
	oldRevision := cs.Status.UpdateRevision
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
	after := settled(t, c, cs, 3)
	if !maps.Equal(before, identities(after)) {
		t.Fatalf("pods changed identity: before %v, after %v", before, identities(after))
	}
	if cs.Status.UpdateRevision == oldRevision || cs.Status.CurrentRevision != cs.Status.UpdateRevision {
		t.Fatalf("revisions after the update: %+v", cs.Status)
	}
	for _, p := range after {
		if p.Spec.Containers[0].Image != "nginx:2" || p.Status.ContainerStatuses[0].RestartCount != 1 || !inplaceupdate.Ready(&p) {
			t.Fatalf("pod %s: image %s, restarts %d, conditions %v", p.Name, p.Spec.Containers[0].Image,
				p.Status.ContainerStatuses[0].RestartCount, p.Status.Conditions)
		}
	}
	waitEvents(t, c, cs, "SuccessfulUpdatePodInPlace", 3)
}

func TestRecreateWhenNotInPlace(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "recreate", 2, "nginx:1", inPlace)
	create(t, c, cs)
	before := identities(settled(t, c, cs, 2))
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "new"}}
	})
	after := identities(settled(t, c, cs, 2))
	for name := range after {
		if _, ok := before[name]; ok {
			t.Fatalf("pod %s survived an env change; pods before %v after %v", name, before, after)
		}
	}
}

func TestPartitionKeepsOldPods(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "part", 4, "nginx:alpine", inPlace, func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2))
	})
	create(t, c, cs)
	settled(t, c, cs, 4)
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = "nginx:latest" })
	got := settled(t, c, cs, 2)
	images := map[string]int{}
	for _, p := range got {
		images[p.Spec.Containers[0].Image]++
	}
	if images["nginx:alpine"] != 2 || images["nginx:latest"] != 2 || cs.Status.ExpectedUpdatedReplicas != 2 {
		t.Fatalf("images = %v, status %+v", images, cs.Status)
	}
}

func TestPodsToDeleteWithScaleDown(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "pick", 4, "nginx:1")
	create(t, c, cs)
	before := settled(t, c, cs, 4)
	victim := before[1].Name
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.Replicas = ptr.To[int32](3)
		cs.Spec.ScaleStrategy.PodsToDelete = []string{victim}
	})
	after := identities(settled(t, c, cs, 3))
	if _, ok := after[victim]; ok || len(after) != 3 {
		t.Fatalf("pods after deleting %s: %v", victim, after)
	}
	for _, p := range before {
		if _, ok := after[p.Name]; !ok && p.Name != victim {
			t.Fatalf("pod %s was deleted besides %s", p.Name, victim)
		}
	}
}

func TestClaimsFollowInstances(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "data", 2, "nginx:1", func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}}
	})
	create(t, c, cs)
	eventually(t, "two pods with claims", func(ctx context.Context) (bool, error) {
		ps, err := pods(ctx, c, cs)
		return len(ps) == 2 && claimsFor(ctx, t, c, ns, ps), err
	})
	ps, _ := pods(t.Context(), c, cs)
	gone := ps[0]
	if err := c.Delete(t.Context(), &gone, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	id := gone.Labels[kruiseappsv1alpha1.CloneSetInstanceID]
	eventually(t, "a replacement reusing instance "+id, func(ctx context.Context) (bool, error) {
		ps, err := pods(ctx, c, cs)
		for _, p := range ps {
			if p.Labels[kruiseappsv1alpha1.CloneSetInstanceID] == id && p.UID != gone.UID {
				return true, err
			}
		}
		return false, err
	})
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](1) })
	eventually(t, "one claim left after the scale-down", func(ctx context.Context) (bool, error) {
		list := &corev1.PersistentVolumeClaimList{}
		err := c.List(ctx, list, client.InNamespace(ns))
		live := 0
		for _, pvc := range list.Items {
			if pvc.DeletionTimestamp == nil {
				live++
			}
		}
		return live == 1, err
	})
}

// claimsFor reports whether each pod mounts its instance's claim and the claim exists, labelled and owned.
func claimsFor(ctx context.Context, t *testing.T, c client.Client, ns string, ps []corev1.Pod) bool {
	for _, p := range ps {
		id := p.Labels[kruiseappsv1alpha1.CloneSetInstanceID]
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-data-" + id}, pvc); err != nil {
			return false
		}
		if pvc.Labels[kruiseappsv1alpha1.CloneSetInstanceID] != id || metav1.GetControllerOf(pvc) == nil {
			t.Fatalf("claim %s: labels %v owners %v", pvc.Name, pvc.Labels, pvc.OwnerReferences)
		}
		if !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
			return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name
		}) {
			t.Fatalf("pod %s does not mount %s: %v", p.Name, pvc.Name, p.Spec.Volumes)
		}
	}
	return true
}

func TestPreDeleteHookHoldsPod(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	const hook = "example.com/unready-blocker-delete"
	cs := newCloneSet(ns, "hooked", 2, "nginx:1", func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.Lifecycle = &kruiseappspub.Lifecycle{PreDelete: &kruiseappspub.LifecycleHook{LabelsHandler: map[string]string{hook: "true"}}}
		cs.Spec.Template.Labels[hook] = "true"
	})
	create(t, c, cs)
	ps := settled(t, c, cs, 2)
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](1) })
	var held corev1.Pod
	eventually(t, "a pod in PreparingDelete", func(ctx context.Context) (bool, error) {
		cur, err := pods(ctx, c, cs)
		for _, p := range cur {
			if p.Labels[kruiseappspub.LifecycleStateKey] == string(kruiseappspub.LifecycleStatePreparingDelete) {
				held = p
				return true, err
			}
		}
		return false, err
	})
	if cur, _ := pods(t.Context(), c, cs); len(cur) != len(ps) {
		t.Fatalf("a hooked pod was deleted before its hook let go: %d pods", len(cur))
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+hook+`":"false"}}}`))
	if err := c.Patch(t.Context(), &held, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the released pod deleted", func(ctx context.Context) (bool, error) {
		cur, err := pods(ctx, c, cs)
		return len(cur) == 1 && cur[0].Name != held.Name, err
	})
}

func TestEmptySelectorIsReported(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "noselector", 1, "nginx:1", func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.Selector = &metav1.LabelSelector{}
	})
	create(t, c, cs)
	eventually(t, "a FailedScale condition naming spec.selector", func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cs), cs); err != nil {
			return false, err
		}
		for _, cond := range cs.Status.Conditions {
			if cond.Type == kruiseappsv1alpha1.CloneSetConditionFailedScale && strings.Contains(cond.Message, "spec.selector") {
				return true, nil
			}
		}
		return false, nil
	})
	if ps, err := pods(t.Context(), c, cs); err != nil || len(ps) != 0 {
		t.Fatalf("a CloneSet without a selector created pods: %d, %v", len(ps), err)
	}
	// The event is recorded before the condition is written, but stored in the background: it may come later.
	eventually(t, "a FailedScale event", func(context.Context) (bool, error) {
		return len(eventReasons(t, c, cs)["FailedScale"]) > 0, nil
	})
}
