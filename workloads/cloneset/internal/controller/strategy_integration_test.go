package controller

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
)

func TestGracePeriodDelaysTheImage(t *testing.T) {
	const grace = 3
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "grace", 1, "nginx:1", inPlace, func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.InPlaceUpdateStrategy = &kruiseappspub.InPlaceUpdateStrategy{GracePeriodSeconds: grace}
	})
	create(t, c, cs)
	uid := settled(t, c, cs, 1)[0].UID
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = "nginx:2" })

	var held corev1.Pod
	eventually(t, "the pod holding the update for its grace period", func(ctx context.Context) (bool, error) {
		ps, err := pods(ctx, c, cs)
		if len(ps) == 1 {
			held = ps[0]
		}
		_, deferred := kruiseappspub.GetInPlaceUpdateGrace(&held)
		return deferred, err
	})
	if held.Spec.Containers[0].Image != "nginx:1" || inplaceupdate.Ready(&held) ||
		held.Labels["controller-revision-hash"] == cs.Status.CurrentRevision {
		t.Fatalf("during the grace: image %s, InPlaceUpdateReady %v, revision %s", held.Spec.Containers[0].Image,
			inplaceupdate.Ready(&held), held.Labels["controller-revision-hash"])
	}
	state, err := kruiseappspub.ParseInPlaceUpdateState(&held)
	if err != nil || state == nil {
		t.Fatalf("update state: %v %v", state, err)
	}
	graceEnds := state.UpdateTimestamp.Add(grace * time.Second)
	eventually(t, "the new image after the grace", func(ctx context.Context) (bool, error) {
		p := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKeyFromObject(&held), p)
		if p.Spec.Containers[0].Image == "nginx:2" && time.Now().Before(graceEnds.Add(-time.Second)) {
			t.Fatalf("image changed %v before the grace ended", time.Until(graceEnds))
		}
		return p.Spec.Containers[0].Image == "nginx:2", err
	})
	if got := settled(t, c, cs, 1); got[0].UID != uid {
		t.Fatal("the pod was recreated")
	}
}

// TestInPlaceUpdateSurges checks maxSurge with an in-place update: one new pod first, then one old pod
// updated in place once the new one is available, then the other old pod deleted; never more than
// replicas + maxSurge pods.
func TestInPlaceUpdateSurges(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "surge", 2, "nginx:1", inPlace, func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
		cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(0))
	})
	create(t, c, cs)
	settled(t, c, cs, 2)
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
	eventually(t, "two updated pods after a surge", func(ctx context.Context) (bool, error) {
		ps, err := pods(ctx, c, cs)
		if len(ps) > 3 {
			t.Fatalf("%d pods, more than replicas + maxSurge", len(ps))
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cs), cs); err != nil {
			return false, err
		}
		s := cs.Status
		return s.ObservedGeneration == cs.Generation && s.UpdatedAvailableReplicas == 2 && len(ps) == 2, err
	})
	// The old pod's deletion, the last step, may be seen before its event is stored (see waitEvents).
	waitEvents(t, c, cs, "SuccessfulCreate", 3)
	waitEvents(t, c, cs, "SuccessfulUpdatePodInPlace", 1)
	waitEvents(t, c, cs, "SuccessfulDelete", 1)
}

func TestOnDeleteWaitsForDeletion(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "ondelete", 2, "nginx:1", func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.OnDeleteCloneSetUpdateStrategyType
	})
	create(t, c, cs)
	before := identities(settled(t, c, cs, 2))
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
	eventually(t, "the new revision observed", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(cs), cs)
		return cs.Status.ObservedGeneration == cs.Generation && cs.Status.UpdateRevision != cs.Status.CurrentRevision, err
	})
	ps, err := pods(t.Context(), c, cs)
	if err != nil || len(ps) != 2 || cs.Status.UpdatedReplicas != 0 {
		t.Fatalf("OnDelete touched pods: %d pods, status %+v, %v", len(ps), cs.Status, err)
	}
	if err := c.Delete(t.Context(), &ps[0], client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	after := settled(t, c, cs, 1)
	for _, p := range after {
		_, old := before[p.Name]
		if old != (p.Spec.Containers[0].Image == "nginx:1") {
			t.Fatalf("pod %s (old %v) runs %s", p.Name, old, p.Spec.Containers[0].Image)
		}
	}
}

func TestProgressDeadline(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "deadline", 1, "nginx:1", func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](2)
		cs.Spec.Template.Spec.NodeSelector = map[string]string{"no-such-node": "true"}
	})
	create(t, c, cs)
	progressing := func(reason kruiseappsv1alpha1.CloneSetConditionReason, status corev1.ConditionStatus) {
		t.Helper()
		eventually(t, "Progressing "+string(reason), func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(cs), cs); err != nil {
				return false, err
			}
			for _, cond := range cs.Status.Conditions {
				if cond.Type == kruiseappsv1alpha1.CloneSetConditionTypeProgressing {
					return cond.Reason == string(reason) && cond.Status == status, nil
				}
			}
			return false, nil
		})
	}
	progressing(kruiseappsv1alpha1.CloneSetProgressDeadlineExceeded, corev1.ConditionFalse)
	waitEvents(t, c, cs, "ProgressDeadlineExceeded", 1)
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Template.Spec.NodeSelector = nil })
	progressing(kruiseappsv1alpha1.CloneSetAvailable, corev1.ConditionTrue)
}

func TestPreDownloadJobsForInPlaceUpdate(t *testing.T) {
	c := startController(t, func(r *Reconciler) { r.PreDownloadImages = true })
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "pull", 4, "nginx:1", inPlace, func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Annotations = map[string]string{kruiseappsv1alpha1.ImagePreDownloadParallelismKey: "2"}
		cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2))
	})
	create(t, c, cs)
	settled(t, c, cs, 4)
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
	settled(t, c, cs, 2)
	job := &kruiseappsv1alpha1.ImagePullJob{}
	eventually(t, "the pre-download job of the new revision", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cs.Status.UpdateRevision + "-main"}, job)
		return err == nil, client.IgnoreNotFound(err)
	})
	if job.Spec.Image != "nginx:2" || job.Spec.Parallelism.IntValue() != 2 || metav1.GetControllerOf(job).UID != cs.UID {
		t.Fatalf("job = %+v", job)
	}
	rev := &appsv1.ControllerRevision{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: cs.Status.UpdateRevision}, rev); err != nil ||
		rev.Labels[kruiseappsv1alpha1.ImagePreDownloadCreatedKey] != "true" {
		t.Fatalf("revision labels %v, %v", rev.Labels, err)
	}
	update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = nil })
	settled(t, c, cs, 4)
	eventually(t, "the job gone once every pod runs the new revision", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(job), &kruiseappsv1alpha1.ImagePullJob{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

func TestAdoptsOrphanPods(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	c := managertest.DirectClient(t, clusterConfig, testScheme(t))
	ns := managertest.Namespace(t, c, "cs")
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "left-behind", Labels: map[string]string{"app": "adopter"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}},
	}
	create(t, c, orphan)
	// The controller starts only now, its cache synced with the orphan in it. Started before, its pod informer
	// could deliver the orphan after the CloneSet's first reconcile, which would create a pod of its own, adopt
	// the orphan and then scale the orphan (no revision) down first.
	startController(t)
	cs := newCloneSet(ns, "adopter", 1, "nginx:1", func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Paused = true // keep the adopted pod as it is
	})
	create(t, c, cs)
	eventually(t, "the orphan adopted", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(orphan), orphan)
		ref := metav1.GetControllerOf(orphan)
		return ref != nil && ref.UID == cs.UID, err
	})
	eventually(t, "the status counting it", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(cs), cs)
		return cs.Status.ObservedGeneration == cs.Generation && cs.Status.Replicas == 1, err
	})
	if ps, err := pods(t.Context(), c, cs); err != nil || len(ps) != 1 || ps[0].Name != orphan.Name {
		t.Fatalf("pods = %v, %v; want only the adopted one", identities(ps), err)
	}
	waitEvents(t, c, cs, "SuccessfulAdopt", 1)
}

func TestReleasesPodsTheSelectorNoLongerMatches(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "cs")
	cs := newCloneSet(ns, "releaser", 2, "nginx:1")
	create(t, c, cs)
	ps := settled(t, c, cs, 2)
	moved := ps[0].DeepCopy()
	managertest.Update(t, c, moved, func(p *corev1.Pod) { p.Labels["app"] = "elsewhere" })
	eventually(t, "the relabelled pod released", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(moved), moved)
		return metav1.GetControllerOf(moved) == nil, err
	})
	after := settled(t, c, cs, 2)
	if _, still := identities(after)[moved.Name]; still {
		t.Fatalf("pods = %v: the released pod %s is still counted", identities(after), moved.Name)
	}
	if moved.DeletionTimestamp != nil {
		t.Fatalf("the released pod %s is being deleted; it should keep running", moved.Name)
	}
	waitEvents(t, c, cs, "SuccessfulRelease", 1)
}
