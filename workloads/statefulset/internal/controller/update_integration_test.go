package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

func setImage(image string) func(*kruiseappsv1beta1.StatefulSet) {
	return func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = image }
}

func inPlace(grace int32) func(*kruiseappsv1beta1.StatefulSet) {
	return func(s *kruiseappsv1beta1.StatefulSet) {
		rolling(s).PodUpdatePolicy = kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
		rolling(s).InPlaceUpdateStrategy = &kruiseappspub.InPlaceUpdateStrategy{GracePeriodSeconds: grace}
		s.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: kruiseappspub.InPlaceUpdateReady}}
	}
}

func uids(ps []corev1.Pod) map[string]types.UID {
	out := map[string]types.UID{}
	for _, p := range ps {
		out[p.Name] = p.UID
	}
	return out
}

// The seed's "three at a time": a recreating update of 5 Parallel pods with maxUnavailable 3 never has more
// than 3 pods out of service, and ends with every pod on the new revision and currentRevision moved.
func TestRollingUpdateKeepsMaxUnavailable(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "nginx", 5, "nginx:1", maxUnavailable(intstr.FromInt32(3)))
	create(t, c, s)
	before := uids(settled(t, c, s, 5))
	w := watch(t, c, s)
	update(t, c, s, setImage("nginx:2"))
	after := settled(t, c, s, 5)
	worst, seen := w.worst()
	if worst > 3 || worst < 1 {
		t.Errorf("at worst %d pods unavailable, want 1 to 3", worst)
	}
	if !slices.Equal(seen, []string{"nginx-0", "nginx-1", "nginx-2", "nginx-3", "nginx-4"}) {
		t.Errorf("pods seen %v", seen)
	}
	for _, p := range after {
		if p.UID == before[p.Name] || p.Spec.Containers[0].Image != "nginx:2" {
			t.Errorf("pod %s not recreated with the new image", p.Name)
		}
	}
	if s.Status.CurrentRevision != s.Status.UpdateRevision || s.Status.CurrentReplicas != 5 {
		t.Errorf("status %+v", s.Status)
	}
}

// The seed's partition 4 of 5 updates only the highest pod; partition 0 then updates the rest.
func TestPartition(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "nginx-a", 5, "nginx:alpine", maxUnavailable(intstr.FromInt32(3)), func(s *kruiseappsv1beta1.StatefulSet) {
		rolling(s).Partition = ptr.To[int32](4)
	})
	create(t, c, s)
	settled(t, c, s, 5)
	update(t, c, s, setImage("nginx:latest"))
	pods := settled(t, c, s, 1)
	consistently(t, "one pod updated", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s), s)
		return err == nil && s.Status.UpdatedReplicas == 1, err
	})
	for _, p := range pods {
		if want := map[bool]string{true: "nginx:latest", false: "nginx:alpine"}[p.Name == "nginx-a-4"]; p.Spec.Containers[0].Image != want {
			t.Errorf("pod %s runs %s, want %s", p.Name, p.Spec.Containers[0].Image, want)
		}
	}
	if s.Status.CurrentRevision == s.Status.UpdateRevision {
		t.Errorf("currentRevision moved with a partition: %+v", s.Status)
	}
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) { rolling(s).Partition = ptr.To[int32](0) })
	settled(t, c, s, 5)
}

// The seed's in-place update with the readiness gate and gracePeriodSeconds: same pods (UIDs, nodes), each
// held not ready through its grace before its container restarts, with upstream's events.
func TestInPlaceUpdateWithGracePeriod(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "nginx-a", 3, "nginx:latest", maxUnavailable(intstr.FromInt32(3)), inPlace(3))
	create(t, c, s)
	before := settled(t, c, s, 3)
	start := time.Now()
	w := watch(t, c, s)
	update(t, c, s, setImage("nginx:alpine"))
	eventually(t, "a pod waiting out its grace period", func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, c, s)
		for _, p := range pods {
			if _, ok := p.Annotations[kruiseappspub.InPlaceUpdateGraceKey]; ok && !ready(&p) && p.Spec.Containers[0].Image == "nginx:latest" {
				return true, nil
			}
		}
		return false, err
	})
	after := settled(t, c, s, 3)
	// The update's start is recorded to the second, as upstream records it: a grace of 3 s lasts at least 2.
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("the update took %v, less than its grace period", took)
	}
	w.worst()
	for i, p := range after {
		if p.UID != before[i].UID || p.Spec.NodeName != before[i].Spec.NodeName || p.Spec.Containers[0].Image != "nginx:alpine" {
			t.Errorf("pod %s was not updated in place: uid %s->%s image %s", p.Name, before[i].UID, p.UID, p.Spec.Containers[0].Image)
		}
		if p.Status.ContainerStatuses[0].RestartCount != before[i].Status.ContainerStatuses[0].RestartCount+1 {
			t.Errorf("pod %s restarted %d times", p.Name, p.Status.ContainerStatuses[0].RestartCount)
		}
		if cond := condition(&p, kruiseappspub.InPlaceUpdateReady); cond == nil || cond.Status != corev1.ConditionTrue {
			t.Errorf("pod %s InPlaceUpdateReady %+v", p.Name, cond)
		}
	}
	eventually(t, "three SuccessfulUpdatePodInPlace events", func(context.Context) (bool, error) {
		return len(eventNotes(t, c, s)["SuccessfulUpdatePodInPlace"]) == 3, nil
	})
	want := "successfully update pod nginx-a-0 in-place(revision " + s.Status.UpdateRevision + ")"
	if notes := eventNotes(t, c, s)["SuccessfulUpdatePodInPlace"]; !slices.Contains(notes, want) {
		t.Errorf("events %v, want %q", notes, want)
	}
}

// A change in-place updates cannot make (env) recreates the pods under InPlaceIfPossible.
func TestInPlaceIfPossibleRecreatesOtherChanges(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "web", 2, "nginx:1", inPlace(0), maxUnavailable(intstr.FromInt32(2)))
	create(t, c, s)
	before := uids(settled(t, c, s, 2))
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
	})
	for _, p := range settled(t, c, s, 2) {
		if p.UID == before[p.Name] {
			t.Errorf("pod %s kept its UID", p.Name)
		}
	}
}

// InPlaceOnly never recreates. A change in-place updates cannot make (the webhook refuses one; here the
// controller meets it) fails the pod's update with FailedUpdatePodInPlace and the FailedUpdatePod condition,
// and the pods stay; an image change after it is made in place and clears the condition.
func TestInPlaceOnlyNeverRecreates(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "web", 2, "nginx:1", inPlace(0), maxUnavailable(intstr.FromInt32(2)), func(s *kruiseappsv1beta1.StatefulSet) {
		rolling(s).PodUpdatePolicy = kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType
	})
	create(t, c, s)
	before := uids(settled(t, c, s, 2))
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
	})
	eventually(t, "FailedUpdatePod and FailedUpdatePodInPlace", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s), s)
		i := conditionIndex(&s.Status, kruiseappsv1beta1.FailedUpdatePod)
		return err == nil && i >= 0 && strings.Contains(s.Status.Conditions[i].Message, "InPlaceOnly") &&
			len(eventNotes(t, c, s)["FailedUpdatePodInPlace"]) > 0, err
	})
	consistently(t, "the same pods", func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, c, s)
		return len(pods) == 2 && uids(pods)["web-0"] == before["web-0"] && uids(pods)["web-1"] == before["web-1"], err
	})
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Env = nil
		s.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	})
	for _, p := range settled(t, c, s, 2) {
		if p.UID != before[p.Name] || p.Spec.Containers[0].Image != "nginx:2" {
			t.Errorf("pod %s: uid %s (was %s), image %s", p.Name, p.UID, before[p.Name], p.Spec.Containers[0].Image)
		}
	}
	if i := conditionIndex(&s.Status, kruiseappsv1beta1.FailedUpdatePod); i >= 0 {
		t.Errorf("condition %+v stays after the update went through", s.Status.Conditions[i])
	}
}

// Paused holds the update; OnDelete leaves it to the user, pod by pod.
func TestPausedAndOnDelete(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "web", 2, "nginx:1", func(s *kruiseappsv1beta1.StatefulSet) { rolling(s).Paused = true })
	create(t, c, s)
	settled(t, c, s, 2)
	update(t, c, s, setImage("nginx:2"))
	eventually(t, "the new revision observed", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s), s)
		return err == nil && s.Status.ObservedGeneration == s.Generation, err
	})
	consistently(t, "no pod updated while paused", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s), s)
		return err == nil && s.Status.UpdatedReplicas == 0, err
	})
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.UpdateStrategy = kruiseappsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	})
	consistently(t, "no pod updated with OnDelete", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s), s)
		return err == nil && s.Status.UpdatedReplicas == 0, err
	})
	if err := c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web-0 recreated on the new revision", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s), s)
		return err == nil && s.Status.UpdatedReadyReplicas == 1 && s.Status.ReadyReplicas == 2, err
	})
}

// An ordered set updates from the highest ordinal down, one pod at a time.
func TestOrderedUpdateFromTheTop(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "db", 3, "nginx:1", ordered)
	create(t, c, s)
	settled(t, c, s, 3)
	w := watch(t, c, s)
	update(t, c, s, setImage("nginx:2"))
	pods := settled(t, c, s, 3)
	if worst, _ := w.worst(); worst > 1 {
		t.Errorf("%d pods unavailable at once", worst)
	}
	if !pods[2].CreationTimestamp.Before(&pods[0].CreationTimestamp) && pods[2].CreationTimestamp.After(pods[0].CreationTimestamp.Time) {
		t.Errorf("db-2 created at %v after db-0 at %v", pods[2].CreationTimestamp, pods[0].CreationTimestamp)
	}
}
