package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	"github.com/flotilla-dev/flotilla/sidecarset/internal/history"
	"github.com/flotilla-dev/flotilla/sidecarset/internal/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

func allReady(n int32) func(kruiseappsv1alpha1.SidecarSetStatus) bool {
	return func(s kruiseappsv1alpha1.SidecarSetStatus) bool {
		return s.MatchedPods == n && s.UpdatedPods == n && s.ReadyPods == n && s.UpdatedReadyPods == n && s.LatestRevision != ""
	}
}

// TestSeedUpgradeByPatch is the seed's story: three injected pods, then the sidecar image changes; every pod
// gets the new image in place, the app container untouched, never more than maxUnavailable pods updating
// at once, and the history records both versions.
func TestSeedUpgradeByPatch(t *testing.T) {
	e := start(t)
	set := e.newSet(t)
	for i := range 3 {
		e.newPod(t, set, fmt.Sprintf("nginx-%d", i))
	}
	first := e.waitStatus(t, set, "three injected pods counted ready", allReady(3))

	stop := e.watchUpdating(t, set)
	e.setImage(t, set, "busybox:latest")
	got := e.waitStatus(t, set, "every pod updated and ready", func(s kruiseappsv1alpha1.SidecarSetStatus) bool {
		return allReady(3)(s) && s.LatestRevision != first.Status.LatestRevision
	})
	if peak := stop(); peak > 1 {
		t.Errorf("%d pods were updating at once, want at most maxUnavailable 1", peak)
	}
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration %d, generation %d", got.Status.ObservedGeneration, got.Generation)
	}
	pods, err := e.pods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range pods {
		if sidecarImage(p) != "busybox:latest" || p.Spec.Containers[1].Image != "nginx:latest" {
			t.Errorf("pod %s runs %v", name, p.Spec.Containers)
		}
		if cs := podcondition.ContainerStatus(p, "scs"); cs == nil || cs.RestartCount != 1 {
			t.Errorf("pod %s sidecar status %+v, want restarted once", name, cs)
		}
		if cs := podcondition.ContainerStatus(p, "nginx"); cs == nil || cs.RestartCount != 0 {
			t.Errorf("pod %s app status %+v, want not restarted", name, cs)
		}
	}
	revs := e.revisions(t, set)
	if len(revs) != 2 {
		t.Errorf("revisions %v, want the two versions", revs)
	}
}

// TestSeedCanaryBySelector is the seed's canary: only the pod labelled canary.release=true gets the new
// sidecar; the others keep theirs.
func TestSeedCanaryBySelector(t *testing.T) {
	e := start(t)
	set := e.newSet(t)
	e.newPod(t, set, "nginx", "canary.release", "true")
	for i := range 3 {
		e.newPod(t, set, fmt.Sprintf("nginx-586b477ddc-%d", i))
	}
	e.waitStatus(t, set, "four injected pods", allReady(4))
	e.setImage(t, set, "busybox:1.28.3", func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary.release": "true"}}
	})
	e.waitStatus(t, set, "the canary updated", func(s kruiseappsv1alpha1.SidecarSetStatus) bool {
		return s.ObservedGeneration == 2 && s.UpdatedPods == 1 && s.UpdatedReadyPods == 1 && s.ReadyPods == 4
	})
	pods, err := e.pods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range pods {
		want := "busybox:1.35.0"
		if name == "nginx" {
			want = "busybox:1.28.3"
		}
		if sidecarImage(p) != want {
			t.Errorf("pod %s sidecar %s, want %s", name, sidecarImage(p), want)
		}
	}
}

// TestPartitionPausedAndNotUpdate: partition keeps that many pods old; paused and NotUpdate hold the rest.
func TestPartitionPausedAndNotUpdate(t *testing.T) {
	e := start(t)
	set := e.newSet(t, func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2))
		s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	})
	for i := range 4 {
		e.newPod(t, set, fmt.Sprintf("nginx-%d", i))
	}
	e.waitStatus(t, set, "four injected pods", allReady(4))
	e.setImage(t, set, "busybox:latest")
	e.waitStatus(t, set, "two updated, two kept by the partition", func(s kruiseappsv1alpha1.SidecarSetStatus) bool {
		return s.ObservedGeneration == 2 && s.UpdatedPods == 2 && s.UpdatedReadyPods == 2
	})
	e.setImage(t, set, "busybox:1.36", func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Partition = nil
		s.Spec.UpdateStrategy.Paused = true
	})
	e.waitStatus(t, set, "paused: nothing updated", func(s kruiseappsv1alpha1.SidecarSetStatus) bool {
		return s.ObservedGeneration == 3 && s.UpdatedPods == 0 && s.MatchedPods == 4
	})
	e.setImage(t, set, "busybox:1.36", func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Paused = false
		s.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.NotUpdateSidecarSetStrategyType
	})
	e.waitStatus(t, set, "NotUpdate observed", func(s kruiseappsv1alpha1.SidecarSetStatus) bool { return s.ObservedGeneration == 4 })
	e.setImage(t, set, "busybox:1.36", func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.RollingUpdateSidecarSetStrategyType
	})
	e.waitStatus(t, set, "resumed: all four at 1.36", allReady(4))
	pods, err := e.pods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range pods {
		if sidecarImage(p) != "busybox:1.36" {
			t.Errorf("pod %s sidecar %s", name, sidecarImage(p))
		}
	}
}

// TestNotUpgradable: a change beyond images leaves running pods as they are, marked not upgradable.
func TestNotUpgradable(t *testing.T) {
	e := start(t)
	set := e.newSet(t)
	e.newPod(t, set, "nginx")
	e.waitStatus(t, set, "one injected pod", allReady(1))
	e.setImage(t, set, "busybox:latest", func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].Command = []string{"sleep", "1d"}
	})
	eventually(t, "the pod marked not upgradable", func(ctx context.Context) (bool, error) {
		pods, err := e.pods(ctx)
		if err != nil {
			return false, err
		}
		c := podcondition.Get(pods["nginx"], kruiseappsv1alpha1.SidecarSetUpgradable)
		return c != nil && c.Status == corev1.ConditionFalse && c.Message == fmt.Sprintf(`{%q:false}`, set.Name), fmt.Errorf("condition %+v", c)
	})
	e.waitStatus(t, set, "counted outdated", func(s kruiseappsv1alpha1.SidecarSetStatus) bool {
		return s.ObservedGeneration == 2 && s.MatchedPods == 1 && s.UpdatedPods == 0
	})
	pods, err := e.pods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sidecarImage(pods["nginx"]) != "busybox:1.35.0" {
		t.Errorf("the pod's sidecar changed to %s", sidecarImage(pods["nginx"]))
	}
}

// TestRevisionHistoryLimit: old revisions no pod uses are pruned to revisionHistoryLimit.
func TestRevisionHistoryLimit(t *testing.T) {
	e := start(t)
	set := e.newSet(t, func(s *kruiseappsv1alpha1.SidecarSet) { s.Spec.RevisionHistoryLimit = ptr.To[int32](1) })
	e.newPod(t, set, "nginx")
	e.waitStatus(t, set, "one injected pod", allReady(1))
	for i, image := range []string{"busybox:1", "busybox:2", "busybox:3"} {
		e.setImage(t, set, image)
		e.waitStatus(t, set, "updated to "+image, func(s kruiseappsv1alpha1.SidecarSetStatus) bool {
			return s.ObservedGeneration == int64(i+2) && allReady(1)(s)
		})
	}
	eventually(t, "history pruned", func(context.Context) (bool, error) {
		revs := e.revisions(t, set)
		return len(revs) == 2, fmt.Errorf("revisions %v", revs)
	})
}

// revisions are the names of the set's ControllerRevisions.
func (e *env) revisions(t *testing.T, set *kruiseappsv1alpha1.SidecarSet) []string {
	t.Helper()
	list := &appsv1.ControllerRevisionList{}
	if err := e.c.List(t.Context(), list, client.InNamespace(e.ns),
		client.MatchingLabelsSelector{Selector: history.Selector(set.Name)}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range list.Items {
		out = append(out, r.Name)
	}
	return out
}

// watchUpdating polls the pods until the returned function is called, which returns the most pods seen at
// once whose sidecars were updated but do not run the new image yet.
func (e *env) watchUpdating(t *testing.T, set *kruiseappsv1alpha1.SidecarSet) func() int {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	peak := 0
	wg.Go(func() {
		for ctx.Err() == nil {
			pods, err := e.pods(ctx)
			if err != nil {
				continue
			}
			n := 0
			for _, p := range pods {
				if _, ok := plan.UpdateStates(p)[set.Name]; ok && !plan.ReadyAndConsistent(p, set) {
					n++
				}
			}
			peak = max(peak, n)
		}
	})
	return func() int {
		cancel()
		wg.Wait()
		return peak
	}
}

// TestHotUpgrade: a hot-upgrade sidecar moves to a new image with one of its two containers running a real
// image at every moment; the old one ends on the empty image and the pod counts updated and ready.
func TestHotUpgrade(t *testing.T) {
	e := start(t)
	set := e.newSet(t, func(s *kruiseappsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].UpgradeStrategy = kruiseappsv1alpha1.SidecarContainerUpgradeStrategy{
			UpgradeType: kruiseappsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1.0"}
	})
	e.newPod(t, set, "nginx")
	e.waitStatus(t, set, "one injected pod", allReady(1))

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	idleSeen := 0
	wg.Go(func() {
		for ctx.Err() == nil {
			pods, err := e.pods(ctx)
			if err != nil || pods["nginx"] == nil {
				continue
			}
			running := 0
			for _, cs := range pods["nginx"].Status.ContainerStatuses {
				if cs.Name != "nginx" && cs.Image != "empty:1.0" {
					running++
				}
			}
			if running == 0 {
				idleSeen++
			}
		}
	})
	e.setImage(t, set, "busybox:latest")
	e.waitStatus(t, set, "hot upgrade settled", func(s kruiseappsv1alpha1.SidecarSetStatus) bool {
		return s.ObservedGeneration == 2 && allReady(1)(s)
	})
	cancel()
	wg.Wait()
	if idleSeen > 0 {
		t.Errorf("%d samples saw no sidecar container running a real image", idleSeen)
	}
	pods, err := e.pods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pod := pods["nginx"]
	want := map[string]string{"scs-1": "empty:1.0", "scs-2": "busybox:latest"}
	for _, c := range pod.Spec.Containers {
		if w, ok := want[c.Name]; ok && c.Image != w {
			t.Errorf("container %s runs %s, want %s", c.Name, c.Image, w)
		}
	}
	if got := inject.WorkingHotUpgradeContainers(pod)["scs"]; got != "scs-2" {
		t.Errorf("working container %q, want scs-2", got)
	}
}
