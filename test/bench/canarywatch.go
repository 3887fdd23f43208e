package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// nginxWeightAnnotation is the annotation the nginx script writes the
// step's weight to.
const nginxWeightAnnotation = "nginx.ingress.kubernetes.io/canary-weight"

// weightChanges marks each change of the canary Ingress's canary-weight,
// with the weight as the value; an Ingress without one marks nothing.
type weightChanges struct {
	last int64
	*marks
}

func newWeightChanges() *weightChanges { return &weightChanges{last: -1, marks: newMarks()} }

func (w *weightChanges) observe(at time.Time, obj runtime.Object) {
	ing, ok := obj.(*networkingv1.Ingress)
	if !ok {
		return
	}
	v, err := strconv.ParseInt(ing.Annotations[nginxWeightAnnotation], 10, 32)
	if err != nil || v == w.last {
		return
	}
	w.last = v
	w.add(v, at)
}

// routingSteps marks each step the Rollout is seen routing traffic for:
// Progressing in StepTrafficRouting.
type routingSteps struct {
	last int32
	*marks
}

func (r *routingSteps) observe(at time.Time, obj runtime.Object) {
	ro, err := rolloutFrom(obj)
	if err != nil {
		return
	}
	sub := ro.Status.CanaryStatus
	if sub == nil || ro.Status.Phase != rolloutsv1beta1.RolloutPhaseProgressing ||
		sub.CurrentStepState != rolloutsv1beta1.CanaryStepStateTrafficRouting || sub.CurrentStepIndex <= r.last {
		return
	}
	r.last = sub.CurrentStepIndex
	r.add(int64(r.last), at)
}

// both hands every event to two handlers, in order.
func both(a, b handler) handler {
	return func(at time.Time, obj runtime.Object) {
		a(at, obj)
		b(at, obj)
	}
}

// Watches of one namespace, for the release scenarios' followers.

func podWatchIn(kube kubernetes.Interface, namespace, selector string) cache.WatchFuncWithContext {
	return func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = selector
		return kube.CoreV1().Pods(namespace).Watch(ctx, opts)
	}
}

func replicaSetWatchIn(kube kubernetes.Interface, namespace, selector string) cache.WatchFuncWithContext {
	return func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = selector
		return kube.AppsV1().ReplicaSets(namespace).Watch(ctx, opts)
	}
}

func ingressWatchIn(kube kubernetes.Interface, namespace, name string) cache.WatchFuncWithContext {
	return func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		return kube.NetworkingV1().Ingresses(namespace).Watch(ctx, opts)
	}
}

// followNamed follows the named object of resource from now on, also one that does not exist yet. The watch
// starts at the resource version of a list, not at the object's own: an object left alone while the cluster made
// tens of thousands of changes has a version the API server's watch cache no longer holds, and a watch from it
// fails as too old.
func followNamed(ctx context.Context, dyn dynamic.Interface, resource schema.GroupVersionResource, namespace, name string,
	handle handler) (*follower, error) {
	list, err := dyn.Resource(resource).Namespace(namespace).List(ctx, nameSelector(name))
	if err != nil {
		return nil, fmt.Errorf("listing %s %s: %w", resource.Resource, name, err)
	}
	return follow(ctx, list.GetResourceVersion(), namedWatchIn(dyn, resource, namespace, name), handle)
}

// nameSelector lists or watches the one object of that name.
func nameSelector(name string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
}

func namedWatchIn(dyn dynamic.Interface, resource schema.GroupVersionResource, namespace, name string) cache.WatchFuncWithContext {
	return func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		return dyn.Resource(resource).Namespace(namespace).Watch(ctx, opts)
	}
}
