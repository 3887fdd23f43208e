package bench

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// releaseFollowers follow what every release scenario measures: the released workload's pods and
// ReplicaSets (selected by app=<workload>), and the BatchRelease and Rollout named after the Rollout.
type releaseFollowers struct {
	namespace, workload, rolloutName string
	// onRollout, when set, also sees every Rollout event.
	onRollout handler

	pods      *readyPods
	sets      *readySets
	batch     *batchProgress
	rollout   *rolloutProgress
	followers []*follower
}

// start begins the common watches, then extra ones; on failure it stops what it started.
func (r *releaseFollowers) start(ctx context.Context, env *Env, dyn dynamic.Interface,
	extra ...func(context.Context, *Env, dynamic.Interface) error) error {
	starts := append([]func(context.Context, *Env, dynamic.Interface) error{
		r.followPods, r.followSets, r.followBatchRelease, r.followRollout}, extra...)
	return r.startAll(ctx, env, dyn, starts)
}

// startWorkload follows only the workload's pods and ReplicaSets. A floor run watches its Deployment so, as
// the release run watches its own: the harness then takes the same share of the machine from both.
func (r *releaseFollowers) startWorkload(ctx context.Context, env *Env) error {
	return r.startAll(ctx, env, nil, []func(context.Context, *Env, dynamic.Interface) error{r.followPods, r.followSets})
}

func (r *releaseFollowers) startAll(ctx context.Context, env *Env, dyn dynamic.Interface,
	starts []func(context.Context, *Env, dynamic.Interface) error) error {
	for _, start := range starts {
		if err := start(ctx, env, dyn); err != nil {
			return errors.Join(err, r.stop())
		}
	}
	return nil
}

func (r *releaseFollowers) add(f *follower, err error) error {
	if err != nil {
		return err
	}
	r.followers = append(r.followers, f)
	return nil
}

func (r *releaseFollowers) followPods(ctx context.Context, env *Env, _ dynamic.Interface) error {
	selector := "app=" + r.workload
	pods, err := env.Kube.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	r.pods = &readyPods{old: map[types.UID]bool{}, seen: map[types.UID]bool{}, marks: newMarks(),
		labelled: map[types.UID]bool{}, labels: newMarks()}
	for i := range pods.Items {
		r.pods.old[pods.Items[i].UID] = true
	}
	return r.add(follow(ctx, pods.ResourceVersion, podWatchIn(env.Kube, r.namespace, selector), r.pods.observe))
}

func (r *releaseFollowers) followSets(ctx context.Context, env *Env, _ dynamic.Interface) error {
	selector := "app=" + r.workload
	sets, err := env.Kube.AppsV1().ReplicaSets(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("listing replica sets: %w", err)
	}
	r.sets = &readySets{old: map[types.UID]bool{}, marks: newMarks()}
	for i := range sets.Items {
		r.sets.old[sets.Items[i].UID] = true
	}
	return r.add(follow(ctx, sets.ResourceVersion, replicaSetWatchIn(env.Kube, r.namespace, selector), r.sets.observe))
}

// followBatchRelease follows the BatchRelease the Rollout creates under its own name.
func (r *releaseFollowers) followBatchRelease(ctx context.Context, _ *Env, dyn dynamic.Interface) error {
	list, err := dyn.Resource(batchReleasesResource).Namespace(r.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing BatchReleases: %w", err)
	}
	r.batch = &batchProgress{ready: newMarks(), completed: newMarks()}
	return r.add(follow(ctx, list.GetResourceVersion(),
		namedWatchIn(dyn, batchReleasesResource, r.namespace, r.rolloutName), r.batch.observe))
}

func (r *releaseFollowers) followRollout(ctx context.Context, _ *Env, dyn dynamic.Interface) error {
	r.rollout = &rolloutProgress{marks: newMarks(), steps: newMarks()}
	observe := r.rollout.observe
	if r.onRollout != nil {
		observe = both(observe, r.onRollout)
	}
	return r.add(followNamed(ctx, dyn, rolloutsResource, r.namespace, r.rolloutName, observe))
}

// stop ends every watch; afterwards the recorders are read without locks.
func (r *releaseFollowers) stop() error {
	var errs []error
	for _, f := range r.followers {
		errs = append(errs, f.stop())
	}
	return errors.Join(errs...)
}
