package bench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	clonesetReplicas = 1000
	// clonesetRunTimeout bounds one run: create, change, wait.
	clonesetRunTimeout = 5 * time.Minute
	// clonesetSettle lets the controllers and the manager's caches go
	// quiet between a workload's creation and the measured change.
	clonesetSettle = 5 * time.Second
)

// clonesetNodes hold 1,000 pods with a fifth to spare (12 x 110 = 1,320),
// as deployment-rollout sizes its nodes: one workload runs at a time.
const clonesetNodes = 12

var clonesetsResource = kruiseappsv1alpha1.GroupVersion.WithResource("clonesets")

// workloadLabels select one workload's pods (app=<name>) and mark them as the harness's.
func workloadLabels(namespace, name string) map[string]string {
	return map[string]string{"app": name, BenchLabel: namespace}
}

// benchCloneSet is a CloneSet of the harness's pod; scaleStrategy and
// minReadySeconds stay unset.
func benchCloneSet(namespace, name string, replicas int32, update kruiseappsv1alpha1.CloneSetUpdateStrategy) *kruiseappsv1alpha1.CloneSet {
	labels := workloadLabels(namespace, name)
	return &kruiseappsv1alpha1.CloneSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "CloneSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: kruiseappsv1alpha1.CloneSetSpec{
			Replicas:       ptr.To(replicas),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template:       benchPodTemplate(labels),
			UpdateStrategy: update,
		},
	}
}

func createCloneSet(ctx context.Context, dyn dynamic.Interface, cs *kruiseappsv1alpha1.CloneSet) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cs)
	if err != nil {
		return fmt.Errorf("encoding CloneSet %s: %w", cs.Name, err)
	}
	_, err = dyn.Resource(clonesetsResource).Namespace(cs.Namespace).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating CloneSet %s: %w", cs.Name, err)
	}
	return nil
}

// patchCloneSet sends a patch and returns the generation it made.
func patchCloneSet(ctx context.Context, dyn dynamic.Interface, namespace, name string, pt types.PatchType, patch []byte) (int64, error) {
	u, err := dyn.Resource(clonesetsResource).Namespace(namespace).Patch(ctx, name, pt, patch, metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("patching CloneSet %s: %w", name, err)
	}
	return u.GetGeneration(), nil
}

// replicasPatch sets spec.replicas.
func replicasPatch(n int32) []byte { return fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n) }

// cloneSetScaled reports whether the CloneSet's status shows its current
// spec observed and every replica Ready and available.
func cloneSetScaled(cs *kruiseappsv1alpha1.CloneSet) bool {
	want, s := ptr.Deref(cs.Spec.Replicas, 1), cs.Status
	return s.ObservedGeneration == cs.Generation && s.Replicas == want && s.ReadyReplicas == want && s.AvailableReplicas == want
}

// cloneSetUpdated reports whether the CloneSet's status shows its current
// spec observed and every replica updated and Ready.
func cloneSetUpdated(cs *kruiseappsv1alpha1.CloneSet) bool {
	want, s := ptr.Deref(cs.Spec.Replicas, 1), cs.Status
	return s.ObservedGeneration == cs.Generation && s.UpdatedReadyReplicas == want
}

// generationsWhere marks the observed generation of every CloneSet event
// that satisfies done.
func generationsWhere(done func(*kruiseappsv1alpha1.CloneSet) bool, m *marks) handler {
	return func(at time.Time, obj runtime.Object) {
		if cs, err := decode[kruiseappsv1alpha1.CloneSet](obj); err == nil && done(cs) {
			m.add(cs.Status.ObservedGeneration, at)
		}
	}
}

// waitCloneSet polls until the CloneSet satisfies done.
func waitCloneSet(ctx context.Context, dyn dynamic.Interface, namespace, name string, done func(*kruiseappsv1alpha1.CloneSet) bool) error {
	return waitObject(ctx, dyn.Resource(clonesetsResource).Namespace(namespace), name, done)
}

// waitObject polls the custom object name until done holds for it, decoded as T, for at most
// clonesetRunTimeout; the error shows its generation and status as last seen.
func waitObject[T any](ctx context.Context, res dynamic.ResourceInterface, name string, done func(*T) bool) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, clonesetRunTimeout, true, func(ctx context.Context) (bool, error) {
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // retried until the timeout
		}
		obj, err := decode[T](u)
		if err != nil {
			return false, err
		}
		last = fmt.Sprintf("generation %d, status %v", u.GetGeneration(), u.Object["status"])
		return done(obj), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %T %s (last seen: %s): %w", new(T), name, last, err)
	}
	return nil
}

// podProgress counts a workload's pods as they reach two stages, each pod
// once: started (created, or given the new image) and finished (Ready, on
// the new image). Pods in old never count.
type podProgress struct {
	started, finished func(*corev1.Pod) bool
	old               map[types.UID]bool
	seenStart         map[types.UID]bool
	seenFinish        map[types.UID]bool
	starts, finishes  *marks
}

func newPodProgress(started, finished func(*corev1.Pod) bool) *podProgress {
	return &podProgress{started: started, finished: finished, old: map[types.UID]bool{},
		seenStart: map[types.UID]bool{}, seenFinish: map[types.UID]bool{}, starts: newMarks(), finishes: newMarks()}
}

func (p *podProgress) observe(at time.Time, obj runtime.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || p.old[pod.UID] {
		return
	}
	if !p.seenStart[pod.UID] && p.started(pod) {
		p.seenStart[pod.UID] = true
		p.starts.add(int64(len(p.seenStart)), at)
	}
	if !p.seenFinish[pod.UID] && p.finished(pod) {
		p.seenFinish[pod.UID] = true
		p.finishes.add(int64(len(p.seenFinish)), at)
	}
}

// anyPod counts every pod: created.
func anyPod(*corev1.Pod) bool { return true }

// specNewImage reports whether the pod's container asks for the in-place scenarios' new image.
func specNewImage(p *corev1.Pod) bool {
	return len(p.Spec.Containers) > 0 && p.Spec.Containers[0].Image == inPlaceImage
}

// readyOnNewImage reports whether the pod is Ready with its container running the new image.
func readyOnNewImage(p *corev1.Pod) bool {
	return isPodReady(p) && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].Image == inPlaceImage
}

// followPods follows the pods of one workload from now on.
func followPods(ctx context.Context, env *Env, namespace, name string, p *podProgress) (*follower, error) {
	selector := "app=" + name
	pods, err := env.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing pods of %s: %w", name, err)
	}
	return follow(ctx, pods.ResourceVersion, podWatchIn(env.Kube, namespace, selector), p.observe)
}

// followCloneSet follows one CloneSet from now on.
func followCloneSet(ctx context.Context, dyn dynamic.Interface, namespace, name string, h handler) (*follower, error) {
	return followNamed(ctx, dyn, clonesetsResource, namespace, name, h)
}

// removeWorkload deletes a workload, then its pods at once rather than by
// the garbage collector's pace, and waits until they are gone.
func removeWorkload(ctx context.Context, env *Env, namespace, name string, del func(context.Context) error) error {
	if err := del(ctx); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", name, err)
	}
	selector := "app=" + name
	err := env.Kube.CoreV1().Pods(namespace).DeleteCollection(ctx,
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("deleting the pods of %s: %w", name, err)
	}
	return waitNoPods(ctx, env, namespace, selector)
}

func waitNoPods(ctx context.Context, env *Env, namespace, selector string) error {
	var left int
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil // retried until the timeout
		}
		left = len(pods.Items)
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the pods %s to go (%d left): %w", selector, left, err)
	}
	return nil
}

// deleteCloneSet deletes a CloneSet, leaving its pods to removeWorkload.
func deleteCloneSet(dyn dynamic.Interface, namespace, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		return dyn.Resource(clonesetsResource).Namespace(namespace).Delete(ctx, name,
			metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	}
}

// startCloneSetScenario readies what the workload scenarios need: the namespace with its default
// ServiceAccount (without which pods are refused), the manager with every node's NodeImage made, a dynamic
// client and kube-controller-manager's process for its figures.
func startCloneSetScenario(ctx context.Context, env *Env, namespace string) (dynamic.Interface, Proc, error) {
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return nil, Proc{}, fmt.Errorf("creating a dynamic client: %w", err)
	}
	if err := ensureNamespace(ctx, env.Kube, namespace); err != nil {
		return nil, Proc{}, err
	}
	if err := waitServiceAccount(ctx, env.Kube, namespace); err != nil {
		return nil, Proc{}, err
	}
	if err := env.StartManager(ctx); err != nil {
		return nil, Proc{}, err
	}
	if err := awaitEveryNodeImage(ctx, env, dyn); err != nil {
		return nil, Proc{}, err
	}
	kcm, err := env.ControllerManagerProc()
	return dyn, kcm, err
}

// awaitEveryNodeImage waits until the manager has made a NodeImage for every node, which it does 30 s after a
// node is Ready: on a fresh cluster of 200 nodes those writes would otherwise fall into the first runs.
func awaitEveryNodeImage(ctx context.Context, env *Env, dyn dynamic.Interface) error {
	env.Logf("waiting for every node's NodeImage")
	return wait.PollUntilContextTimeout(ctx, time.Second, nodeImagesWait, true, func(ctx context.Context) (bool, error) {
		nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		images, err := dyn.Resource(nodeImagesResource).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		return len(images.Items) >= len(nodes.Items), nil
	})
}
