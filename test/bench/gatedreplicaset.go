package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// kindGatedReplicaSet is a ReplicaSet whose pods carry two readiness gates, as a CloneSet's do
// (InPlaceUpdateReady, KruisePodReady), set True by the harness in one status write per pod, sent as soon as
// the harness sees the pod, as an installed controller would send it (Env.GateWriter). It is what the cluster
// pays for the gates alone, with no controller's cost: the least any controller that gates its pods as
// upstream's CloneSet does can take.
const kindGatedReplicaSet = "GatedReplicaSet"

// Its gates are its own, so that no controller of the manager writes them.
var benchGates = []corev1.PodConditionType{"bench.flotilla.dev/gate-a", "bench.flotilla.dev/gate-b"}

// settleSlots bounds the harness's settle writes in flight, as the CloneSet controller bounds its own
// (createWorkers): filed as a controller's, more would be rejected (HTTP 429) and retried a second later.
const settleSlots = 128

func gatedReplicaSetTarget(env *Env, name string) scaleTarget {
	t := replicaSetTarget(env.Kube, name)
	t.kind = kindGatedReplicaSet
	sets := env.Kube.AppsV1().ReplicaSets(scaleNamespace)
	t.create = func(ctx context.Context) error {
		rs := benchReplicaSet(scaleNamespace, name, 0)
		for _, g := range benchGates {
			rs.Spec.Template.Spec.ReadinessGates = append(rs.Spec.Template.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: g})
		}
		if _, err := sets.Create(ctx, rs, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ReplicaSet %s: %w", name, err)
		}
		return nil
	}
	t.helper = func(ctx context.Context) (func() (int64, error), error) {
		return settleGates(ctx, env, scaleNamespace, name, benchGates)
	}
	return t
}

// settleGates sets gates True on every new pod of the workload name in namespace until the returned stop,
// which reports how many writes that took.
func settleGates(ctx context.Context, env *Env, namespace, name string, gates []corev1.PodConditionType) (func() (int64, error), error) {
	kube, err := env.GateWriter(ctx)
	if err != nil {
		return nil, err
	}
	pods := kube.CoreV1().Pods(namespace)
	selector := "app=" + name
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	s := &gateSettler{pods: pods.Patch, gates: gates, patch: gatesPatch(gates), sent: map[types.UID]bool{}, slots: make(chan struct{}, settleSlots)}
	ctx, cancel := context.WithCancel(ctx)
	f, err := follow(ctx, list.ResourceVersion, podWatchIn(kube, namespace, selector), func(_ time.Time, obj runtime.Object) {
		s.observe(ctx, obj)
	})
	if err != nil {
		cancel()
		return nil, err
	}
	return func() (int64, error) {
		err := f.stop()
		s.wg.Wait()
		cancel()
		return s.writes.Load(), err
	}, nil
}

type patchFunc func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error)

type gateSettler struct {
	pods   patchFunc
	gates  []corev1.PodConditionType
	patch  []byte
	sent   map[types.UID]bool // touched by the watch's one dispatching goroutine only
	slots  chan struct{}
	wg     sync.WaitGroup
	writes atomic.Int64
}

// observe settles a pod the first time it is seen alive with its gates unset.
func (s *gateSettler) observe(ctx context.Context, obj runtime.Object) {
	p, ok := obj.(*corev1.Pod)
	if !ok || s.sent[p.UID] || p.DeletionTimestamp != nil || gatesSet(p, s.gates) {
		return
	}
	s.sent[p.UID] = true
	s.wg.Go(func() {
		s.slots <- struct{}{}
		defer func() { <-s.slots }()
		if _, err := s.pods(ctx, p.Name, types.StrategicMergePatchType, s.patch, metav1.PatchOptions{}, "status"); err == nil {
			s.writes.Add(1)
		}
	})
}

func gatesSet(p *corev1.Pod, gates []corev1.PodConditionType) bool {
	for _, g := range gates {
		found := false
		for _, c := range p.Status.Conditions {
			found = found || (c.Type == g && c.Status == corev1.ConditionTrue)
		}
		if !found {
			return false
		}
	}
	return true
}

// gatesPatch is a pods/status strategic merge patch setting the gates True.
func gatesPatch(gates []corev1.PodConditionType) []byte {
	now := metav1.Now()
	conds := make([]corev1.PodCondition, 0, len(gates))
	for _, g := range gates {
		conds = append(conds, corev1.PodCondition{Type: g, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	raw, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}}) //nolint:errchkjson // plain structs
	return raw
}
