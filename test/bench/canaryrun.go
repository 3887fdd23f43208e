package bench

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
)

// canaryRecorders follow the released Deployment's pods and ReplicaSets,
// its BatchRelease and Rollout, and the canary Ingress through a run.
type canaryRecorders struct {
	releaseFollowers
	routing *routingSteps
	weights *weightChanges
}

func startCanaryRecorders(ctx context.Context, env *Env, dyn dynamic.Interface) (*canaryRecorders, error) {
	r := &canaryRecorders{routing: &routingSteps{marks: newMarks()}}
	r.releaseFollowers = releaseFollowers{namespace: trafficNamespace, workload: trafficWorkload,
		rolloutName: trafficRollout, onRollout: r.routing.observe}
	if err := r.start(ctx, env, dyn, r.followCanaryIngress); err != nil {
		return nil, err
	}
	return r, nil
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

func (r *canaryRecorders) fill(t *trafficTimeline) {
	t.PodsReady = r.pods.all()
	t.SetReady = r.sets.all()
	t.BatchReady = r.batch.ready.all()
	t.Routing = r.routing.all()
	t.Weights = r.weights.all()
}
