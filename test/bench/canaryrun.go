package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// canaryRecorders follow the released Deployment's pods and ReplicaSets,
// its BatchRelease and Rollout, and the canary Ingress through a run.
type canaryRecorders struct {
	pods      *readyPods
	sets      *readySets
	batch     *batchProgress
	rollout   *rolloutProgress
	routing   *routingSteps
	weights   *weightChanges
	followers []*follower
}

func startCanaryRecorders(ctx context.Context, env *Env, dyn dynamic.Interface) (*canaryRecorders, error) {
	r := &canaryRecorders{}
	for _, start := range []func(context.Context, *Env, dynamic.Interface) error{
		r.followPods, r.followSets, r.followBatchRelease, r.followRollout, r.followCanaryIngress,
	} {
		if err := start(ctx, env, dyn); err != nil {
			return nil, errors.Join(err, r.stop())
		}
	}
	return r, nil
}

func (r *canaryRecorders) add(f *follower, err error) error {
	if err != nil {
		return err
	}
	r.followers = append(r.followers, f)
	return nil
}

func (r *canaryRecorders) followPods(ctx context.Context, env *Env, _ dynamic.Interface) error {
	selector := "app=" + trafficWorkload
	pods, err := env.Kube.CoreV1().Pods(trafficNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	r.pods = &readyPods{old: map[types.UID]bool{}, seen: map[types.UID]bool{}, marks: newMarks(),
		labelled: map[types.UID]bool{}, labels: newMarks()}
	for i := range pods.Items {
		r.pods.old[pods.Items[i].UID] = true
	}
	return r.add(follow(ctx, pods.ResourceVersion, podWatchIn(env.Kube, trafficNamespace, selector), r.pods.observe))
}

func (r *canaryRecorders) followSets(ctx context.Context, env *Env, _ dynamic.Interface) error {
	selector := "app=" + trafficWorkload
	sets, err := env.Kube.AppsV1().ReplicaSets(trafficNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("listing replica sets: %w", err)
	}
	r.sets = &readySets{old: map[types.UID]bool{}, marks: newMarks()}
	for i := range sets.Items {
		r.sets.old[sets.Items[i].UID] = true
	}
	return r.add(follow(ctx, sets.ResourceVersion, replicaSetWatchIn(env.Kube, trafficNamespace, selector), r.sets.observe))
}

// followBatchRelease follows the BatchRelease the Rollout creates under
// its own name.
func (r *canaryRecorders) followBatchRelease(ctx context.Context, _ *Env, dyn dynamic.Interface) error {
	list, err := dyn.Resource(batchReleasesResource).Namespace(trafficNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing BatchReleases: %w", err)
	}
	r.batch = &batchProgress{ready: newMarks(), completed: newMarks()}
	return r.add(follow(ctx, list.GetResourceVersion(),
		namedWatchIn(dyn, batchReleasesResource, trafficNamespace, trafficRollout), r.batch.observe))
}

func (r *canaryRecorders) followRollout(ctx context.Context, _ *Env, dyn dynamic.Interface) error {
	u, err := dyn.Resource(rolloutsResource).Namespace(trafficNamespace).Get(ctx, trafficRollout, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("getting Rollout %s: %w", trafficRollout, err)
	}
	r.rollout = &rolloutProgress{marks: newMarks(), steps: newMarks()}
	r.routing = &routingSteps{marks: newMarks()}
	return r.add(follow(ctx, u.GetResourceVersion(), namedWatchIn(dyn, rolloutsResource, trafficNamespace, trafficRollout),
		both(r.rollout.observe, r.routing.observe)))
}

// followCanaryIngress follows the canary Ingress, which the Rollout
// creates when the release starts.
func (r *canaryRecorders) followCanaryIngress(ctx context.Context, env *Env, _ dynamic.Interface) error {
	list, err := env.Kube.NetworkingV1().Ingresses(trafficNamespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", trafficCanary).String(),
	})
	if err != nil {
		return fmt.Errorf("listing Ingresses: %w", err)
	}
	if len(list.Items) > 0 {
		return fmt.Errorf("the canary Ingress %s exists before the release", trafficCanary)
	}
	r.weights = newWeightChanges()
	return r.add(follow(ctx, list.ResourceVersion, ingressWatchIn(env.Kube, trafficNamespace, trafficCanary), r.weights.observe))
}

// release applies the change and waits for the Rollout to complete.
func (r *canaryRecorders) release(ctx context.Context, env *Env, t *trafficTimeline) error {
	t.Start = time.Now()
	if err := applyTrafficChange(ctx, env); err != nil {
		return err
	}
	done, err := r.rollout.await(ctx, 1)
	if err != nil {
		return fmt.Errorf("waiting for Rollout %s to complete (last seen: %s; canary-weight seen: %s): %w",
			trafficRollout, r.rollout.lastSeen(), weightList(r.weights.all()), err)
	}
	t.Completed = done.At
	return nil
}

// stop ends every watch; afterwards the recorders are read without locks.
func (r *canaryRecorders) stop() error {
	var errs []error
	for _, f := range r.followers {
		errs = append(errs, f.stop())
	}
	return errors.Join(errs...)
}

func (r *canaryRecorders) fill(t *trafficTimeline) {
	t.PodsReady = r.pods.all()
	t.SetReady = r.sets.all()
	t.BatchReady = r.batch.ready.all()
	t.Routing = r.routing.all()
	t.Weights = r.weights.all()
}
