package cluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// testFailingImages checks the stages that let a bad release be rehearsed: an image under unpullable.invalid/
// waits in ImagePullBackOff, one under crashloop.invalid/ in CrashLoopBackOff, at pod start and after an
// in-place image change; a pod with such a container is never Ready.
func testFailingImages(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	for name, tc := range map[string]struct{ image, reason string }{
		"pull":  {"unpullable.invalid/app:v2", "ImagePullBackOff"},
		"crash": {"crashloop.invalid/app:v2", "CrashLoopBackOff"},
	} {
		pod := newPod("failing-"+name, tc.image)
		if _, err := client.CoreV1().Pods(testNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod: %v", err)
		}
		got := waitWaiting(t, client, pod.Name, tc.reason)
		if podReady(got) {
			t.Errorf("pod %s with %s is Ready", got.Name, tc.image)
		}
	}
	pod := newPod("breaks-in-place", "nginx:1.25")
	if _, err := client.CoreV1().Pods(testNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	waitFor(t, "pod ready", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(testNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && podReady(p), err
	})
	patch := `{"spec":{"containers":[{"name":"app","image":"unpullable.invalid/app:v2"}]}}`
	if _, err := client.CoreV1().Pods(testNamespace).Patch(ctx, pod.Name, types.StrategicMergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch image: %v", err)
	}
	if got := waitWaiting(t, client, pod.Name, "ImagePullBackOff"); podReady(got) || got.Status.Phase != corev1.PodRunning {
		t.Errorf("after an in-place change to an unpullable image: phase %s, ready %v; want Running and not ready",
			got.Status.Phase, podReady(got))
	}
}

func newPod(name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

// waitWaiting returns the pod once its container waits for reason.
func waitWaiting(t *testing.T, client kubernetes.Interface, name, reason string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, name+" waiting in "+reason, func(ctx context.Context) (bool, error) {
		var err error
		pod, err = client.CoreV1().Pods(testNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(pod.Status.ContainerStatuses) == 0 {
			return false, err
		}
		w := pod.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == reason, nil
	})
	return pod
}
