package launchpriority

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/sidecarset/launchpriority"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// newPod creates a pod of a ReplicaSet (one the manager's cache slims) with the given containers, put behind
// their barriers as the pod webhook does.
func newPod(t *testing.T, c client.Client, ns, name string, annotations map[string]string, containers ...corev1.Container) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f",
				UID: "8d3c2a57-2f39-4a43-9d0e-3d1f1f0b6a11", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), Containers: containers},
	}
	if _, err := launchpriority.Assign(pod, nil); err != nil {
		t.Fatal(err)
	}
	create(t, c, pod)
	return pod
}

func app(name string, env ...corev1.EnvVar) corev1.Container {
	return corev1.Container{Name: name, Image: "testapp:v1", Env: env}
}

// setReady writes the pod's container statuses as a kubelet would: the named containers running and
// ready, the others waiting.
func setReady(t *testing.T, c client.Client, pod *corev1.Pod, ready ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("containers %v ready", ready), func(ctx context.Context) (bool, error) {
		cur := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
			return false, err
		}
		cur.Status.ContainerStatuses = nil
		for _, ct := range cur.Spec.Containers {
			s := corev1.ContainerStatus{Name: ct.Name, Image: ct.Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError"}}}
			if slices.Contains(ready, ct.Name) {
				s.Ready, s.Started = true, ptr.To(true)
				s.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
			}
			cur.Status.ContainerStatuses = append(cur.Status.ContainerStatuses, s)
		}
		err := c.Status().Update(ctx, cur)
		return err == nil, err
	})
}

// waitBarrier waits until the pod's barrier holds exactly keys.
func waitBarrier(t *testing.T, c client.Client, pod *corev1.Pod, keys ...string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	want := slices.Sorted(slices.Values(keys))
	eventually(t, fmt.Sprintf("barrier keys %v", want), func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: launchpriority.BarrierName(pod.Name)}, cm)
		if err != nil {
			return false, err
		}
		got := slices.Sorted(maps.Keys(cm.Data))
		return slices.Equal(got, want), fmt.Errorf("barrier keys %v", got)
	})
	return cm
}

func completed(t *testing.T, c client.Client, pod *corev1.Pod) bool {
	t.Helper()
	cur := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), cur); err != nil {
		t.Fatal(err)
	}
	return launchpriority.Completed(cur)
}

func waitCompleted(t *testing.T, c client.Client, pod *corev1.Pod) {
	t.Helper()
	eventually(t, "the launch completed", func(ctx context.Context) (bool, error) {
		cur := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKeyFromObject(pod), cur)
		return err == nil && launchpriority.Completed(cur), err
	})
}

func TestOrderedLaunchOpensOneKeyAtATime(t *testing.T) {
	c, ns := start(t)
	ordered := map[string]string{kruiseappspub.ContainerLaunchPriorityKey: kruiseappspub.ContainerLaunchOrdered}
	pod := newPod(t, c, ns, "web-1", ordered, app("proxy"), app("app"), app("log"))

	cm := waitBarrier(t, c, pod, "p_0")
	if ref := metav1.GetControllerOfNoCopy(cm); ref != nil || len(cm.OwnerReferences) != 1 ||
		cm.OwnerReferences[0].Kind != "Pod" || cm.OwnerReferences[0].UID != pod.UID {
		t.Errorf("barrier owners = %+v, want the pod %s", cm.OwnerReferences, pod.UID)
	}
	setReady(t, c, pod) // statuses that change nothing: the next key waits for proxy
	waitBarrier(t, c, pod, "p_0")
	if completed(t, c, pod) {
		t.Fatal("the launch completed while containers wait")
	}

	setReady(t, c, pod, "proxy")
	waitBarrier(t, c, pod, "p_0", "p_-1")
	if completed(t, c, pod) {
		t.Fatal("the launch completed while log waits")
	}
	setReady(t, c, pod, "proxy", "app")
	waitBarrier(t, c, pod, "p_0", "p_-1", "p_-2")
	waitCompleted(t, c, pod)
}

func TestPriorityEnvSharesAKey(t *testing.T) {
	c, ns := start(t)
	prio := func(v string) corev1.EnvVar {
		return corev1.EnvVar{Name: kruiseappspub.ContainerLaunchPriorityEnvName, Value: v}
	}
	plain := newPod(t, c, ns, "plain", nil, app("a"), app("b"))
	pod := newPod(t, c, ns, "web-2", nil, app("a", prio("5")), app("b", prio("5")), app("c"))

	waitBarrier(t, c, pod, "p_5")
	setReady(t, c, pod, "a")
	waitBarrier(t, c, pod, "p_5")
	setReady(t, c, pod, "a", "b")
	waitBarrier(t, c, pod, "p_5", "p_0")
	waitCompleted(t, c, pod)

	err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: launchpriority.BarrierName(plain.Name)}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a pod without priorities got a barrier: %v", err)
	}
}

func TestDeletedBarrierIsRecreated(t *testing.T) {
	c, ns := start(t)
	ordered := map[string]string{kruiseappspub.ContainerLaunchPriorityKey: kruiseappspub.ContainerLaunchOrdered}
	pod := newPod(t, c, ns, "web-3", ordered, app("a"), app("b"))
	cm := waitBarrier(t, c, pod, "p_0")
	if err := c.Delete(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	setReady(t, c, pod, "a")
	waitBarrier(t, c, pod, "p_-1")
	waitCompleted(t, c, pod)
}

func TestBarrierOfAnEarlierPodIsReplaced(t *testing.T) {
	c, ns := start(t)
	create(t, c, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: launchpriority.BarrierName("web-4"),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-4", UID: "0b0e5c1e-5d7a-4c2f-9a43-7f4a52c1d001"}}},
		Data: map[string]string{"p_0": "true", "p_-1": "true"},
	})
	ordered := map[string]string{kruiseappspub.ContainerLaunchPriorityKey: kruiseappspub.ContainerLaunchOrdered}
	pod := newPod(t, c, ns, "web-4", ordered, app("a"), app("b"))
	eventually(t, "the pod's own barrier", func(ctx context.Context) (bool, error) {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: launchpriority.BarrierName(pod.Name)}, cm); err != nil {
			return false, err
		}
		owned := len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == pod.UID
		return owned && slices.Equal(slices.Sorted(maps.Keys(cm.Data)), []string{"p_0"}),
			fmt.Errorf("owners %+v keys %v", cm.OwnerReferences, cm.Data)
	})
	if completed(t, c, pod) {
		t.Error("the launch completed on the earlier pod's keys")
	}
}
