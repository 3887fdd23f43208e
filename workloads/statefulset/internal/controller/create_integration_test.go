package controller

import (
	"context"
	"slices"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

func TestCreatesPodsWithTheirIdentityAndReportsUpstreamsStatus(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "web", 3, "nginx:1")
	create(t, c, s)
	pods := settled(t, c, s, 3)
	if got := names(pods); !slices.Equal(got, []string{"web-0", "web-1", "web-2"}) {
		t.Fatalf("pods %v", got)
	}
	st := s.Status
	if st.CurrentRevision != st.UpdateRevision || st.ReadyReplicas != 3 || st.CurrentReplicas != 3 || st.UpdatedReplicas != 3 ||
		st.UpdatedReadyReplicas != 3 || st.LabelSelector != "app=web" || ptr.Deref(st.CollisionCount, -1) != 0 {
		t.Errorf("status %+v", st)
	}
	for i, p := range pods {
		want := map[string]string{"app": "web", "statefulset.kubernetes.io/pod-name": p.Name, "apps.kubernetes.io/pod-index": strconv.Itoa(i),
			"controller-revision-hash": st.UpdateRevision, "lifecycle.apps.kruise.io/state": "Normal"}
		for k, v := range want {
			if p.Labels[k] != v {
				t.Errorf("pod %s label %s = %q, want %q", p.Name, k, p.Labels[k], v)
			}
		}
		if p.Spec.Hostname != p.Name || p.Spec.Subdomain != "web" || metav1.GetControllerOf(&p).Kind != "StatefulSet" {
			t.Errorf("pod %s: hostname %q subdomain %q owner %v", p.Name, p.Spec.Hostname, p.Spec.Subdomain, p.OwnerReferences)
		}
	}
	eventually(t, "SuccessfulCreate events", func(context.Context) (bool, error) {
		return len(eventNotes(t, c, s)["SuccessfulCreate"]) == 3, nil
	})
	if notes := eventNotes(t, c, s)["SuccessfulCreate"]; !slices.Contains(notes, "create Pod web-0 in StatefulSet web successful") {
		t.Errorf("events %v", notes)
	}
}

// unpullable is an image the simulated nodes never pull: its pods never become Ready.
const unpullable = "unpullable.invalid/app:1"

// OrderedReady creates each pod once the ones below it are Ready: with a pod that never becomes Ready, the
// set stops there. Deleting the stuck pod after a template fix (what the native StatefulSet asks of its
// users too) lets it go on; scaling down deletes from the top, one at a time.
func TestOrderedReadyWaitsForEachPod(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "db", 3, unpullable, ordered)
	create(t, c, s)
	onlyFirst := func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, c, s)
		return err == nil && slices.Equal(names(pods), []string{"db-0"}), err
	}
	eventually(t, "db-0", onlyFirst)
	consistently(t, "only db-0, never Ready", onlyFirst)
	w := watch(t, c, s)
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "nginx:1" })
	if err := c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-0"}}); err != nil {
		t.Fatal(err)
	}
	settled(t, c, s, 3)
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	settled(t, c, s, 1)
	if gaps := w.gaps(); len(gaps) > 0 {
		t.Errorf("the live pods were not always db-0..db-k: %v", gaps)
	}
}

// The seed's reserveOrdinals: ordinal 1 reserved among 4 replicas leaves pods 0, 2, 3 and 4; reserving the
// ordinal of a running pod deletes it and a higher ordinal takes its place; ranges work too.
func TestReserveOrdinals(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "nginx-a", 4, "nginx:1", func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1)}
	})
	create(t, c, s)
	if got := names(settled(t, c, s, 4)); !slices.Equal(got, []string{"nginx-a-0", "nginx-a-2", "nginx-a-3", "nginx-a-4"}) {
		t.Fatalf("pods %v", got)
	}
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.ReserveOrdinals = append(s.Spec.ReserveOrdinals, intstr.FromString("3-4"))
	})
	if got := names(settled(t, c, s, 4)); !slices.Equal(got, []string{"nginx-a-0", "nginx-a-2", "nginx-a-5", "nginx-a-6"}) {
		t.Fatalf("pods %v", got)
	}
}

// scaleStrategy.maxUnavailable lets a Parallel scale-up create only as many pods as may be unavailable: with
// pods that never become Ready, two of five; once the template is fixed (the unavailable pods are replaced
// at once), the rest follow.
func TestScaleStrategyMaxUnavailable(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "web", 5, unpullable, func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.ScaleStrategy = &kruiseappsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))}
	})
	create(t, c, s)
	eventually(t, "two pods", func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, c, s)
		return len(pods) == 2, err
	})
	consistently(t, "no more than two pods", func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, c, s)
		return err == nil && len(pods) == 2, err
	})
	eventually(t, "a ScaleUpLimited event", func(context.Context) (bool, error) {
		return slices.Contains(eventNotes(t, c, s)["ScaleUpLimited"], "scaleUp is limited because of scaleStrategy.maxUnavailable, limit: 2"), nil
	})
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "nginx:1" })
	settled(t, c, s, 5)
}

// A pod that failed is deleted and recreated at its ordinal.
func TestRecreatesAFailedPod(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "web", 2, "nginx:1")
	create(t, c, s)
	pods := settled(t, c, s, 2)
	failed := pods[1].DeepCopy()
	failed.Status.Phase = corev1.PodFailed
	if err := c.Status().Update(t.Context(), failed); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new web-1", func(ctx context.Context) (bool, error) {
		p := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-1"}, p)
		return err == nil && p.UID != pods[1].UID, client.IgnoreNotFound(err)
	})
	settled(t, c, s, 2)
	if notes := eventNotes(t, c, s)["RecreatingFailedPod"]; len(notes) == 0 {
		t.Error("no RecreatingFailedPod event")
	}
}

// A set created through the v1alpha1 API is the same object: the controller runs it.
func TestRunsSetsCreatedAsV1alpha1(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	alpha := &kruiseappsv1alpha1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"},
		Spec: kruiseappsv1alpha1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "old"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "old"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}}},
		},
	}
	create(t, c, alpha)
	s := &kruiseappsv1beta1.StatefulSet{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(alpha), s); err != nil {
		t.Fatal(err)
	}
	settled(t, c, s, 2)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(alpha), alpha); err != nil {
		t.Fatal(err)
	}
	if alpha.Status.ReadyReplicas != 2 || alpha.Status.UpdateRevision == "" {
		t.Errorf("v1alpha1 status %+v", alpha.Status)
	}
}

// A preDelete hook holds a pod the set scales away in PreparingDelete until its finalizer goes.
func TestPreDeleteHookHoldsScaleDown(t *testing.T) {
	const hook = "example.com/unregister"
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "web", 2, "nginx:1", func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.Lifecycle = &kruiseappspub.Lifecycle{PreDelete: &kruiseappspub.LifecycleHook{FinalizersHandler: []string{hook}, MarkPodNotReady: true}}
		s.Spec.Template.Finalizers = []string{hook}
	})
	create(t, c, s)
	settled(t, c, s, 2)
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	p := &corev1.Pod{}
	eventually(t, "web-1 preparing deletion and not ready", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-1"}, p)
		return err == nil && p.Labels[kruiseappspub.LifecycleStateKey] == "PreparingDelete" && !ready(p) && p.DeletionTimestamp == nil, err
	})
	managertest.Update(t, c, p, func(p *corev1.Pod) { p.Finalizers = nil })
	settled(t, c, s, 1)
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// With the StatefulSetStartOrdinal gate, spec.ordinals.start numbers the pods from it; raising it replaces the
// pods below the new start by ones above the old end, as the native StatefulSet does.
func TestOrdinalsStartNumbersThePods(t *testing.T) {
	c := startController(t, func(r *Reconciler) { r.StartOrdinal = true })
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "web", 2, "nginx:1", func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.Ordinals = &kruiseappsv1beta1.StatefulSetOrdinals{Start: 5}
	})
	create(t, c, s)
	if got := names(settled(t, c, s, 2)); !slices.Equal(got, []string{"web-5", "web-6"}) {
		t.Fatalf("pods %v, want web-5 web-6", got)
	}
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Ordinals.Start = 6 })
	eventually(t, "pods web-6 and web-7", func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, c, s)
		return slices.Equal(names(pods), []string{"web-6", "web-7"}), err
	})
}
