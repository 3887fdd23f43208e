package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
	"github.com/flotilla-dev/flotilla/workloads/revision"
)

// A new DaemonSet runs one pod per node of its pool, pinned by node affinity, labelled and gated as
// upstream's, and its revision carries the hash kube's DaemonSet controller gives the same template.
func TestOnePodPerNode(t *testing.T) {
	t.Parallel()
	c, ns := startController(t)
	pool := managertest.NodePool(t, c, 3, poolTaint)
	native := nativeTwin(t, c, pool)
	ds := newDaemonSet(ns, pool, func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.Template = native.Spec.Template })
	create(t, c, ds)
	pods := waitFleet(t, c, ds, 3, 3)
	reread(t, c, ds)
	if want := nativeHash(t, c, native); ds.Status.DaemonSetHash != want {
		t.Errorf("daemonSetHash %q, kube's DaemonSet controller hashes the same template %q", ds.Status.DaemonSetHash, want)
	}
	cr := &appsv1.ControllerRevision{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "agent-" + ds.Status.DaemonSetHash}, cr); err != nil {
		t.Fatalf("the revision: %v", err)
	}
	if ref := metav1.GetControllerOf(cr); ref == nil || ref.UID != ds.UID || cr.Labels[plan.HashLabel] != ds.Status.DaemonSetHash {
		t.Errorf("revision owner %v labels %v", cr.OwnerReferences, cr.Labels)
	}
	for node, p := range pods {
		expectDaemonPod(t, ds, node, p)
	}
	var created []string
	for _, p := range pods {
		created = append(created, "Created pod: "+p.Name)
	}
	slices.Sort(created)
	eventually(t, "a SuccessfulCreate event per pod", func(ctx context.Context) (bool, error) {
		notes, err := eventNotes(ctx, c, ds, "SuccessfulCreate")
		return slices.Equal(notes, created), fmt.Errorf("notes %v (%w)", notes, err)
	})
	expectCondition(t, ds, plan.ConditionReady, corev1.ConditionTrue, plan.ReasonAvailable)
}

func expectDaemonPod(t *testing.T, ds *kruiseappsv1alpha1.DaemonSet, node string, p corev1.Pod) {
	t.Helper()
	if !strings.HasPrefix(p.Name, "agent-") || metav1.GetControllerOf(&p).UID != ds.UID {
		t.Errorf("pod %s: name or owner %v", p.Name, p.OwnerReferences)
	}
	if p.Labels[plan.HashLabel] != ds.Status.DaemonSetHash {
		t.Errorf("pod %s: controller-revision-hash %q, want %q", p.Name, p.Labels[plan.HashLabel], ds.Status.DaemonSetHash)
	}
	if got, err := nodeplacement.TargetNode(&corev1.Pod{Spec: corev1.PodSpec{Affinity: p.Spec.Affinity}}); err != nil || got != node {
		t.Errorf("pod %s on %s is pinned to %q (%v)", p.Name, node, got, err)
	}
	if !podcondition.HasGate(&p, kruiseappspub.KruisePodReadyConditionType) {
		t.Errorf("pod %s: readiness gates %v", p.Name, p.Spec.ReadinessGates)
	}
	if !slices.ContainsFunc(p.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Key == corev1.TaintNodeNotReady }) {
		t.Errorf("pod %s lacks the daemon tolerations: %v", p.Name, p.Spec.Tolerations)
	}
}

// nativeTwin runs an apps/v1 DaemonSet on the pool in a namespace of its own and returns it as the apiserver
// defaulted it: its template, given to an Advanced DaemonSet, must hash the same.
func nativeTwin(t *testing.T, c client.Client, pool string) *appsv1.DaemonSet {
	t.Helper()
	tmpl := newDaemonSet("", pool).Spec.Template
	native := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: managertest.Namespace(t, c, "ds"), Name: "native"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}, Template: tmpl}}
	create(t, c, native)
	return native
}

func nativeHash(t *testing.T, c client.Client, native *appsv1.DaemonSet) string {
	t.Helper()
	var hash string
	eventually(t, "the native DaemonSet's revision", func(ctx context.Context) (bool, error) {
		list := &appsv1.ControllerRevisionList{}
		if err := c.List(ctx, list, client.InNamespace(native.Namespace)); err != nil || len(list.Items) == 0 {
			return false, err
		}
		hash = list.Items[0].Labels[plan.HashLabel]
		return hash != "", nil
	})
	return hash
}

func expectCondition(t *testing.T, ds *kruiseappsv1alpha1.DaemonSet, ct appsv1.DaemonSetConditionType, status corev1.ConditionStatus, reason string) {
	t.Helper()
	for _, cond := range ds.Status.Conditions {
		if cond.Type == ct {
			if cond.Status != status || cond.Reason != reason {
				t.Errorf("condition %s = %s/%s, want %s/%s", ct, cond.Status, cond.Reason, status, reason)
			}
			return
		}
	}
	t.Errorf("no %s condition in %v", ct, ds.Status.Conditions)
}

// A node that joins gets its pod; one relabelled out of the selector, tainted NoExecute or removed loses it;
// one tainted NoSchedule keeps a pod it runs and never gets a new one.
func TestNodesComeAndGo(t *testing.T) {
	t.Parallel()
	c, ns := startController(t)
	pool := managertest.NodePool(t, c, 2, poolTaint)
	ds := newDaemonSet(ns, pool)
	create(t, c, ds)
	waitFleet(t, c, ds, 2, 2)

	added := managertest.PoolNode(t, c, pool, 2, poolTaint)
	waitFleet(t, c, ds, 3, 3)

	patchNode(t, c, pool+"-0", `{"metadata":{"labels":{"pool":"elsewhere"}}}`)
	pods := waitFleet(t, c, ds, 2, 2)
	if _, ok := pods[pool+"-0"]; ok {
		t.Errorf("the relabelled node keeps its pod")
	}

	if err := c.Delete(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pool + "-1"}}); err != nil {
		t.Fatal(err)
	}
	waitFleet(t, c, ds, 1, 1)

	patchNode(t, c, added.Name, `{"spec":{"taints":[{"key":"flotilla.dev/daemonset-test","value":"x","effect":"NoSchedule"},{"key":"maintenance","effect":"NoSchedule"}]}}`)
	eventually(t, "the NoSchedule node's pod kept, counted misscheduled", func(ctx context.Context) (bool, error) {
		got := &kruiseappsv1alpha1.DaemonSet{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ds), got); err != nil {
			return false, err
		}
		pods, err := livePods(ctx, c, ds)
		_, kept := pods[added.Name]
		return err == nil && kept && len(pods) == 1 && got.Status.DesiredNumberScheduled == 0 && got.Status.NumberMisscheduled == 1,
			fmt.Errorf("status %+v pods %v (%w)", got.Status, images(pods), err)
	})
	patchNode(t, c, added.Name, `{"spec":{"taints":[{"key":"flotilla.dev/daemonset-test","value":"x","effect":"NoSchedule"},{"key":"maintenance","effect":"NoExecute"}]}}`)
	eventually(t, "the NoExecute node's pod gone", func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, c, ds)
		return err == nil && len(pods) == 0, err
	})
}

func patchNode(t *testing.T, c client.Client, name, patch string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Patch(t.Context(), node, client.RawPatch("application/strategic-merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// A Standard rolling update with maxUnavailable 2 recreates every pod, two nodes at a time at most.
func TestStandardRollingUpdate(t *testing.T) {
	t.Parallel()
	c, ns := startController(t)
	pool := managertest.NodePool(t, c, 4, poolTaint)
	ds := newDaemonSet(ns, pool, rollingUpdate(func(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet) {
		ru.MaxUnavailable = intOrStr(2)
	}))
	create(t, c, ds)
	before := waitFleet(t, c, ds, 4, 4)
	watch := watchAvailability(t, c, ds)
	update(t, c, ds, newImage)
	after := waitFleet(t, c, ds, 4, 4)
	if worst := watch(); worst > 2 {
		t.Errorf("%d nodes were without an available pod at once, maxUnavailable 2", worst)
	}
	for node, p := range after {
		if p.UID == before[node].UID || p.Spec.Containers[0].Image != "agent:v2" {
			t.Errorf("node %s: pod %s image %s, want a new pod of agent:v2", node, p.Name, p.Spec.Containers[0].Image)
		}
	}
	eventually(t, "a SuccessfulDelete event per old pod", func(ctx context.Context) (bool, error) {
		notes, err := eventNotes(ctx, c, ds, "SuccessfulDelete")
		return len(notes) == 4, fmt.Errorf("%v %w", notes, err)
	})
}

// watchAvailability samples the DaemonSet's nodes until the returned function is called, which reports the
// most nodes seen at once without an available pod.
func watchAvailability(t *testing.T, c client.Client, ds *kruiseappsv1alpha1.DaemonSet) func() int {
	ctx, cancel := context.WithCancel(t.Context())
	worst := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			got := &kruiseappsv1alpha1.DaemonSet{}
			if c.Get(ctx, client.ObjectKeyFromObject(ds), got) == nil {
				worst = max(worst, int(got.Status.DesiredNumberScheduled-got.Status.NumberAvailable))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() int {
		cancel()
		<-done
		return worst
	}
}

// partition keeps nodes on the old revision (the last names update first); paused holds the update where it
// stands; rollingUpdate.selector updates only the nodes it matches.
func TestPartitionPauseAndSelector(t *testing.T) {
	t.Parallel()
	c, ns := startController(t)
	pool := managertest.NodePool(t, c, 4, poolTaint)
	ds := newDaemonSet(ns, pool, rollingUpdate(func(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet) {
		ru.Partition = intOrStr(2)
	}))
	create(t, c, ds)
	waitFleet(t, c, ds, 4, 4)
	update(t, c, ds, newImage)
	pods := waitFleet(t, c, ds, 4, 2)
	want := map[string]string{pool + "-0": "agent:v1", pool + "-1": "agent:v1", pool + "-2": "agent:v2", pool + "-3": "agent:v2"}
	expectImages(t, pods, want)
	reread(t, c, ds)
	expectCondition(t, ds, plan.ConditionReady, corev1.ConditionTrue, plan.ReasonUpdateHeld)

	update(t, c, ds, rollingUpdate(func(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet) { ru.Paused, ru.Partition = ptr.To(true), nil }))
	waitFleet(t, c, ds, 4, 2)
	settled(t, c, ds)
	expectImages(t, waitFleet(t, c, ds, 4, 2), want)

	update(t, c, ds, rollingUpdate(func(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet) {
		ru.Paused = nil
		ru.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"index": "0"}}
	}))
	want[pool+"-0"] = "agent:v2"
	expectImages(t, waitFleet(t, c, ds, 4, 3), want)

	update(t, c, ds, rollingUpdate(func(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet) { ru.Selector = nil }))
	waitFleet(t, c, ds, 4, 4)
}

func expectImages(t *testing.T, pods map[string]corev1.Pod, want map[string]string) {
	t.Helper()
	if got := images(pods); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("images by node %v, want %v", got, want)
	}
}

// InPlaceIfPossible changes the image of the same pod (kwok restarts the container), through the
// InPlaceUpdateReady gate; a change that cannot be made in place recreates the pods.
func TestInPlaceUpdate(t *testing.T) {
	t.Parallel()
	c, ns := startController(t)
	pool := managertest.NodePool(t, c, 2, poolTaint)
	ds := newDaemonSet(ns, pool, rollingUpdate(func(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet) {
		ru.Type = kruiseappsv1alpha1.InplaceRollingUpdateType
	}))
	create(t, c, ds)
	before := waitFleet(t, c, ds, 2, 2)
	for _, p := range before {
		if !podcondition.HasGate(&p, kruiseappspub.InPlaceUpdateReady) {
			t.Fatalf("pod %s lacks the InPlaceUpdateReady gate: %v", p.Name, p.Spec.ReadinessGates)
		}
	}
	update(t, c, ds, newImage)
	after := waitFleet(t, c, ds, 2, 2)
	for node, p := range after {
		old := before[node]
		if p.UID != old.UID || p.Spec.Containers[0].Image != "agent:v2" || p.Status.ContainerStatuses[0].RestartCount != old.Status.ContainerStatuses[0].RestartCount+1 {
			t.Errorf("node %s: pod %s (uid %s) image %s restarts %d; want the same pod, agent:v2, one more restart", node, p.Name, p.UID,
				p.Spec.Containers[0].Image, p.Status.ContainerStatuses[0].RestartCount)
		}
		if c := podcondition.Get(&p, kruiseappspub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionTrue {
			t.Errorf("pod %s: InPlaceUpdateReady %v", p.Name, c)
		}
	}
	eventually(t, "a SuccessfulUpdatePodInPlace event per pod", func(ctx context.Context) (bool, error) {
		notes, err := eventNotes(ctx, c, ds, "SuccessfulUpdatePodInPlace")
		return len(notes) == 2 && strings.HasPrefix(notes[0], "successfully update pod agent-"), fmt.Errorf("%v %w", notes, err)
	})

	update(t, c, ds, func(ds *kruiseappsv1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
	})
	for node, p := range waitFleet(t, c, ds, 2, 2) {
		if p.UID == after[node].UID {
			t.Errorf("node %s: an env change kept pod %s, which cannot change in place", node, p.Name)
		}
	}
}

// maxSurge starts the new pod beside the old one, which goes once its replacement is available.
func TestSurgeUpdate(t *testing.T) {
	t.Parallel()
	c, ns := startController(t)
	pool := managertest.NodePool(t, c, 2, poolTaint)
	ds := newDaemonSet(ns, pool, rollingUpdate(func(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet) {
		ru.MaxUnavailable, ru.MaxSurge = intOrStr(0), intOrStr(1)
	}))
	create(t, c, ds)
	waitFleet(t, c, ds, 2, 2)
	watch := watchAvailability(t, c, ds)
	update(t, c, ds, newImage)
	expectImages(t, waitFleet(t, c, ds, 2, 2), map[string]string{pool + "-0": "agent:v2", pool + "-1": "agent:v2"})
	if worst := watch(); worst > 0 {
		t.Errorf("a surge left %d nodes without an available pod", worst)
	}
}

// The preDelete hook holds a pod the update replaces in PreparingDelete, not ready, until its operator
// removes the hook's label; the pod is then deleted and replaced.
func TestPreDeleteHook(t *testing.T) {
	t.Parallel()
	c, ns := startController(t)
	pool := managertest.NodePool(t, c, 1, poolTaint)
	const hook = "example.com/drain"
	ds := newDaemonSet(ns, pool, func(ds *kruiseappsv1alpha1.DaemonSet) {
		ds.Spec.Lifecycle = &kruiseappspub.Lifecycle{PreDelete: &kruiseappspub.LifecycleHook{
			LabelsHandler: map[string]string{hook: "true"}, MarkPodNotReady: true}}
		ds.Spec.Template.Labels[hook] = "true"
	})
	create(t, c, ds)
	old := waitFleet(t, c, ds, 1, 1)[pool+"-0"]
	update(t, c, ds, newImage)
	eventually(t, "the old pod held in PreparingDelete, not ready", func(ctx context.Context) (bool, error) {
		p := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(&old), p); err != nil {
			return false, err
		}
		return p.Labels[kruiseappspub.LifecycleStateKey] == string(kruiseappspub.LifecycleStatePreparingDelete) && !podcondition.IsReady(p) &&
			p.DeletionTimestamp == nil, fmt.Errorf("labels %v", p.Labels)
	})
	settled(t, c, ds)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(&old), &corev1.Pod{}); err != nil {
		t.Fatalf("the hooked pod went without its operator: %v", err)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, hook)
	if err := c.Patch(t.Context(), &old, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
	pods := waitFleet(t, c, ds, 1, 1)
	if p := pods[pool+"-0"]; p.UID == old.UID || p.Spec.Containers[0].Image != "agent:v2" {
		t.Errorf("after the hook: pod %s image %s", p.Name, p.Spec.Containers[0].Image)
	}
}

// OnDelete replaces a pod only once someone deletes it.
func TestOnDelete(t *testing.T) {
	t.Parallel()
	c, ns := startController(t)
	pool := managertest.NodePool(t, c, 2, poolTaint)
	ds := newDaemonSet(ns, pool, func(ds *kruiseappsv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy = kruiseappsv1alpha1.DaemonSetUpdateStrategy{Type: kruiseappsv1alpha1.OnDeleteDaemonSetStrategyType}
	})
	create(t, c, ds)
	pods := waitFleet(t, c, ds, 2, 2)
	update(t, c, ds, newImage)
	waitFleet(t, c, ds, 2, 0)
	settled(t, c, ds)
	victim := pods[pool+"-1"]
	if err := c.Delete(t.Context(), &victim); err != nil {
		t.Fatal(err)
	}
	expectImages(t, waitFleet(t, c, ds, 2, 1), map[string]string{pool + "-0": "agent:v1", pool + "-1": "agent:v2"})
}

// With progressive-create-pod the partition also keeps pods away from nodes without one.
func TestProgressiveCreation(t *testing.T) {
	t.Parallel()
	c, ns := startController(t)
	pool := managertest.NodePool(t, c, 3, poolTaint)
	ds := newDaemonSet(ns, pool, rollingUpdate(func(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet) {
		ru.Partition = intOrStr(2)
	}), func(ds *kruiseappsv1alpha1.DaemonSet) {
		ds.Annotations = map[string]string{kruiseappsv1alpha1.ProgressiveCreatePodAnnotation: "true"}
	})
	create(t, c, ds)
	eventually(t, "one pod", func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, c, ds)
		return err == nil && len(pods) == 1, err
	})
	settled(t, c, ds)
	if pods, err := livePods(t.Context(), c, ds); err != nil || len(pods) != 1 {
		t.Fatalf("partition 2 of 3 created %d pods (%v)", len(pods), err)
	}
	update(t, c, ds, rollingUpdate(func(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet) { ru.Partition = intOrStr(0) }))
	waitFleet(t, c, ds, 3, 3)
}

// minReadySeconds: a ready pod counts as available only after them.
func TestMinReadySeconds(t *testing.T) {
	t.Parallel()
	c, ns := startController(t)
	pool := managertest.NodePool(t, c, 1, poolTaint)
	ds := newDaemonSet(ns, pool, func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.MinReadySeconds = 3 })
	create(t, c, ds)
	eventually(t, "ready before available", func(ctx context.Context) (bool, error) {
		got := &kruiseappsv1alpha1.DaemonSet{}
		err := c.Get(ctx, client.ObjectKeyFromObject(ds), got)
		return err == nil && got.Status.NumberReady == 1 && got.Status.NumberAvailable == 0, err
	})
	waitFleet(t, c, ds, 1, 1)
}

// An orphan pod the selector matches is adopted; a pod relabelled out of the selector is released.
func TestAdoptAndRelease(t *testing.T) {
	t.Parallel()
	c, ns := startController(t)
	pool := managertest.NodePool(t, c, 1, poolTaint)
	ds := newDaemonSet(ns, pool)
	// Labelled with the revision the DaemonSet will give its template, as a pod of the same template left by
	// a deleted DaemonSet is: adopted, it runs on as updated.
	hash := revision.TemplateHash(&ds.Spec.Template, nil)
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan", Labels: map[string]string{"app": "agent", plan.HashLabel: hash}},
		Spec: *ds.Spec.Template.Spec.DeepCopy()}
	orphan.Spec.NodeName = pool + "-0"
	create(t, c, orphan)
	create(t, c, ds)
	eventually(t, "the orphan adopted", func(ctx context.Context) (bool, error) {
		p := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKeyFromObject(orphan), p)
		ref := metav1.GetControllerOf(p)
		return err == nil && ref != nil && ref.UID == ds.UID, err
	})
	pods := waitFleet(t, c, ds, 1, 1)
	p := pods[pool+"-0"]
	if p.UID != orphan.UID {
		t.Fatalf("the adopted pod was replaced by %s", p.Name)
	}
	if err := c.Patch(t.Context(), &p, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"app":"gone"}}}`))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the relabelled pod released", func(ctx context.Context) (bool, error) {
		got := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKeyFromObject(&p), got)
		return err == nil && metav1.GetControllerOf(got) == nil, err
	})
	waitFleet(t, c, ds, 1, 1)
}
