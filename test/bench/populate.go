package bench

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	// createWorkers is how many creates the harness keeps in flight.
	createWorkers = 8
	pollEvery     = 3 * time.Second
	progressEvery = 20 * time.Second
	// BenchLabel marks every object the harness creates.
	BenchLabel = "bench.flotilla.dev/scenario"
)

// benchObjectMeta names an object the harness creates in namespace, with BenchLabel.
func benchObjectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{BenchLabel: namespace}}
}

// Populate creates n Deployments of the given replicas in namespace and
// waits until all their pods are Ready, returning how long that took.
func Populate(ctx context.Context, env *Env, namespace string, n, replicas int) (time.Duration, error) {
	begin := time.Now()
	if err := ensureNamespace(ctx, env.Kube, namespace); err != nil {
		return 0, err
	}
	// Without it the ServiceAccount admission plugin rejects the pods.
	if err := waitServiceAccount(ctx, env.Kube, namespace); err != nil {
		return 0, err
	}
	env.Logf("creating %d Deployments of %d replicas", n, replicas)
	if err := createDeployments(ctx, env.Kube, namespace, n, int32(replicas)); err != nil {
		return 0, err
	}
	if err := waitReadyReplicas(ctx, env, namespace, n*replicas); err != nil {
		return 0, err
	}
	took := time.Since(begin)
	env.Logf("%d pods Ready in %v", n*replicas, took.Round(time.Second))
	return took, nil
}

func waitServiceAccount(ctx context.Context, kube kubernetes.Interface, namespace string) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the default ServiceAccount of %s: %w", namespace, err)
	}
	return nil
}

func createDeployments(ctx context.Context, kube kubernetes.Interface, namespace string, n int, replicas int32) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(createWorkers)
	deployments := kube.AppsV1().Deployments(namespace)
	for i := range n {
		g.Go(func() error {
			_, err := deployments.Create(ctx, benchDeployment(namespace, i, replicas), metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating deployment %d: %w", i, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// benchDeployment is a plain one-container Deployment, like most.
func benchDeployment(namespace string, i int, replicas int32) *appsv1.Deployment {
	name := fmt.Sprintf("app-%04d", i)
	labels := map[string]string{"app": name, BenchLabel: namespace}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: benchPodTemplate(labels),
		},
	}
}

// benchImage is the image of the harness's pods; kwok runs nothing.
const benchImage = "registry.k8s.io/pause:3.10"

// benchPodTemplate is the harness's one-container pod: small requests,
// so that node capacity counts pods, and no grace period, so that deleted
// pods go at once.
func benchPodTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name: "app", Image: benchImage,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(10, resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(16<<20, resource.BinarySI),
				}},
			}},
		},
	}
}

// waitReadyReplicas polls the Deployments' status until want replicas are
// Ready, printing progress now and then.
func waitReadyReplicas(ctx context.Context, env *Env, namespace string, want int) error {
	lastReport := time.Now()
	err := wait.PollUntilContextCancel(ctx, pollEvery, true, func(ctx context.Context) (bool, error) {
		ready, err := readyReplicas(ctx, env.Kube, namespace)
		if err != nil {
			return false, nil // transient under load; retried until ctx ends
		}
		if time.Since(lastReport) >= progressEvery {
			env.Logf("%d/%d pods Ready", ready, want)
			lastReport = time.Now()
		}
		return ready >= want, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d Ready pods in %s: %w", want, namespace, err)
	}
	return nil
}

func readyReplicas(ctx context.Context, kube kubernetes.Interface, namespace string) (int, error) {
	list, err := kube.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return 0, fmt.Errorf("listing deployments: %w", err)
	}
	ready := 0
	for i := range list.Items {
		ready += int(list.Items[i].Status.ReadyReplicas)
	}
	return ready, nil
}
