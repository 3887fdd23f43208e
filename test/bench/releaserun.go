package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
)

// floorRun is the plain Deployment's run: kube-controller-manager's own
// rolling update of the same change.
type floorRun struct {
	took time.Duration
	// tail runs from the last new pod seen Ready to the Deployment seen rolled out: what kube-controller-manager
	// itself needs after the pods, the native counterpart of the release's finalising.
	tail  time.Duration
	phase Phase
}

func runFloorChange(ctx context.Context, env *Env, kcm Proc, sc releaseScale, change []byte) (floorRun, error) {
	ctx, cancel := context.WithTimeout(ctx, sc.runTimeout)
	defer cancel()
	complete := newMarks()
	f, err := followNamedDeployment(ctx, env.Kube, floorWorkload, completedGenerations(complete))
	if err != nil {
		return floorRun{}, err
	}
	watched := &releaseFollowers{namespace: releaseNamespace, workload: floorWorkload}
	if err := watched.startWorkload(ctx, env); err != nil {
		return floorRun{}, errors.Join(err, f.stop())
	}
	if err := sleep(ctx, watchConnect); err != nil {
		return floorRun{}, errors.Join(err, f.stop(), watched.stop())
	}
	env.Logf("floor: applying the change to Deployment %s, which no Rollout releases", floorWorkload)
	var run floorRun
	var done time.Time
	run.phase, err = env.Measure(ctx, []Proc{kcm}, func(ctx context.Context) (err error) {
		run.took, done, err = timeFloor(ctx, env, complete, sc.replicas, change)
		return err
	})
	err = errors.Join(err, f.stop(), watched.stop())
	if err == nil {
		run.tail, err = nativeTail(watched.pods.all(), done, sc.replicas)
	}
	return run, err
}

// nativeTail is done minus when the last new pod was seen Ready.
func nativeTail(ready []mark, done time.Time, replicas int) (time.Duration, error) {
	last, ok := firstMark(ready, int64(replicas))
	if !ok {
		return 0, fmt.Errorf("the floor's %d new pods were not all seen Ready", replicas)
	}
	return done.Sub(last.At), nil
}

// timeFloor applies the change and returns how long until the watch
// showed every pod updated and available.
func timeFloor(ctx context.Context, env *Env, complete *marks, replicas int, change []byte) (time.Duration, time.Time, error) {
	begin := time.Now()
	d, err := applyChange(ctx, env, floorWorkload, change)
	if err != nil {
		return 0, time.Time{}, err
	}
	done, err := complete.await(ctx, d.Generation)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("waiting for deployment %s to roll out: %w", floorWorkload, err)
	}
	took := done.At.Sub(begin)
	env.Logf("floor: %d pods replaced in %v", replicas, took.Round(time.Millisecond))
	return took, done.At, nil
}

// completedGenerations marks each generation of a Deployment that
// kube-controller-manager has rolled out completely.
func completedGenerations(m *marks) handler {
	return func(at time.Time, obj runtime.Object) {
		if d, ok := obj.(*appsv1.Deployment); ok && rolledOut(d) {
			m.add(d.Status.ObservedGeneration, at)
		}
	}
}

func rolledOut(d *appsv1.Deployment) bool {
	want, s := ptr.Deref(d.Spec.Replicas, 1), d.Status
	return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}

// releaseRun is the Rollout's run.
type releaseRun struct {
	phase    Phase
	timeline releaseTimeline
}

func runRelease(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc, sc releaseScale, change []byte) (releaseRun, error) {
	ctx, cancel := context.WithTimeout(ctx, sc.runTimeout)
	defer cancel()
	rec, err := startRecorders(ctx, env, dyn, sc.replicas)
	if err != nil {
		return releaseRun{}, err
	}
	if err := sleep(ctx, watchConnect); err != nil {
		return releaseRun{}, errors.Join(err, rec.stop())
	}
	env.Logf("release: applying the change to Deployment %s, released by Rollout %s", releaseWorkload, releaseRollout)
	var run releaseRun
	run.phase, err = env.Measure(ctx, []Proc{kcm}, func(ctx context.Context) error {
		return rec.release(ctx, env, &run.timeline, change)
	})
	if err = errors.Join(err, rec.stop()); err != nil {
		return run, err
	}
	rec.fill(&run.timeline)
	return run, nil
}

// releaseRecorders follow the released Deployment, its pods and
// ReplicaSets, and its Rollout through a run.
type releaseRecorders struct {
	releaseFollowers
	batches  *batchWrites
	replicas int // of the released Deployment
}

func startRecorders(ctx context.Context, env *Env, dyn dynamic.Interface, replicas int) (*releaseRecorders, error) {
	r := &releaseRecorders{replicas: replicas, releaseFollowers: releaseFollowers{
		namespace: releaseNamespace, workload: releaseWorkload, rolloutName: releaseRollout}}
	if err := r.start(ctx, env, dyn, r.followDeployment); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *releaseRecorders) followDeployment(ctx context.Context, env *Env, _ dynamic.Interface) error {
	scrape := func() (map[RequestKey]float64, error) { return env.ManagerRequests(ctx) }
	r.batches = &batchWrites{scrape: scrape}
	r.pods.readAtAll(r.replicas, scrape)
	return r.add(followNamedDeployment(ctx, env.Kube, releaseWorkload, r.batches.observe))
}

// release applies the change and waits for the Rollout to complete,
// reading the manager's request counter at both ends.
func (r *releaseRecorders) release(ctx context.Context, env *Env, t *releaseTimeline, change []byte) error {
	var err error
	if t.StartRequests, err = env.ManagerRequests(ctx); err != nil {
		return err
	}
	t.Start = time.Now()
	if _, err := applyChange(ctx, env, releaseWorkload, change); err != nil {
		return err
	}
	done, err := r.rollout.await(ctx, 1)
	if err != nil {
		return fmt.Errorf("waiting for Rollout %s to complete (last seen: %s): %w", releaseRollout, r.rollout.lastSeen(), err)
	}
	t.Completed = done.At
	t.EndRequests, err = env.ManagerRequests(ctx)
	return err
}

// stop ends every watch and reports the partition scrapes that failed.
func (r *releaseRecorders) stop() error {
	err := r.releaseFollowers.stop()
	if r.batches != nil {
		err = errors.Join(err, r.batches.err)
	}
	if r.pods != nil {
		err = errors.Join(err, r.pods.atAll.err)
	}
	return err
}

func (r *releaseRecorders) fill(t *releaseTimeline) {
	t.Batches = r.batches.list
	t.PodsReady = r.pods.all()
	t.PodsLabelled = r.pods.labels.all()
	t.AllReadyRequests = r.pods.atAll.read()
	t.SetReady = r.sets.all()
	t.BatchReady = r.batch.ready.all()
	t.BatchCompleted = r.batch.completed.all()
	t.RolloutSteps = r.rollout.steps.all()
}

// batchWrites records each rise of the Deployment's partition with the
// manager's request counter read right after it arrived.
type batchWrites struct {
	scrape func() (map[RequestKey]float64, error)
	list   []batchMark
	err    error
}

func (b *batchWrites) observe(at time.Time, obj runtime.Object) {
	updated, ok := partitionOf(obj)
	if !ok || (len(b.list) > 0 && updated <= b.list[len(b.list)-1].Updated) {
		return
	}
	requests, err := b.scrape()
	if err != nil {
		b.err = errors.Join(b.err, fmt.Errorf("reading the manager's requests at partition %d: %w", updated, err))
	}
	b.list = append(b.list, batchMark{Updated: updated, At: at, Requests: requests})
}

// partitionOf is the number of pods the deployment-strategy annotation
// puts on the new template.
func partitionOf(obj runtime.Object) (int32, bool) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return 0, false
	}
	s, found, err := control.DeploymentStrategyFrom(d.Annotations)
	if err != nil || !found {
		return 0, false
	}
	n, err := control.PartitionedReplicas(s.Partition, ptr.Deref(d.Spec.Replicas, 1))
	return n, err == nil
}

// readyPods marks, for each pod of the new template seen Ready, how many
// such pods have been seen Ready so far; labels does the same for the
// pods seen with the release's rollout-id.
type readyPods struct {
	old      map[types.UID]bool
	seen     map[types.UID]bool
	labelled map[types.UID]bool
	labels   *marks
	// atAll is the manager's request counter when the last new pod is seen Ready.
	atAll requestsAt
	*marks
}

// requestsAt reads the manager's request counter once, when the pods seen Ready reach a count.
type requestsAt struct {
	mu       sync.Mutex
	count    int
	scrape   func() (map[RequestKey]float64, error)
	requests map[RequestKey]float64
	err      error
}

// readAtAll reads the manager's request counter when the count-th new pod is seen Ready.
func (p *readyPods) readAtAll(count int, scrape func() (map[RequestKey]float64, error)) {
	p.atAll.mu.Lock()
	defer p.atAll.mu.Unlock()
	p.atAll.count, p.atAll.scrape = count, scrape
}

func (r *requestsAt) reached(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.scrape == nil || n != r.count {
		return
	}
	r.requests, r.err = r.scrape()
}

func (r *requestsAt) read() map[RequestKey]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

func (p *readyPods) observe(at time.Time, obj runtime.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || p.old[pod.UID] {
		return
	}
	if !p.labelled[pod.UID] && pod.Labels[rolloutsv1beta1.RolloutIDLabel] == releaseID {
		p.labelled[pod.UID] = true
		p.labels.add(int64(len(p.labelled)), at)
	}
	if !p.seen[pod.UID] && isPodReady(pod) {
		p.seen[pod.UID] = true
		p.add(int64(len(p.seen)), at)
		p.atAll.reached(len(p.seen))
	}
}

func isPodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readySets marks each rise of the new ReplicaSet's readyReplicas, which
// is what the engine reads a batch's readiness from.
type readySets struct {
	old   map[types.UID]bool
	ready int32
	*marks
}

func (s *readySets) observe(at time.Time, obj runtime.Object) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok || s.old[rs.UID] || rs.Status.ReadyReplicas <= s.ready {
		return
	}
	s.ready = rs.Status.ReadyReplicas
	s.add(int64(s.ready), at)
}

// rolloutProgress marks the end of the release: the Rollout Healthy and
// Completed after it was Progressing.
// steps marks each step the release enters.
type rolloutProgress struct {
	mu          sync.Mutex
	progressing bool
	last        string
	step        int32
	steps       *marks
	*marks
}

func (p *rolloutProgress) observe(at time.Time, obj runtime.Object) {
	ro, err := rolloutFrom(obj)
	if err != nil {
		return
	}
	if sub := ro.Status.CanaryStatus; sub != nil && ro.Status.Phase == rolloutsv1beta1.RolloutPhaseProgressing && sub.CurrentStepIndex > p.step {
		p.step = sub.CurrentStepIndex
		p.steps.add(int64(p.step), at)
	}
	if p.note(ro.Status) {
		p.add(1, at)
	}
}

// note records the Rollout's state and reports whether it ends the release.
func (p *rolloutProgress) note(st rolloutsv1beta1.RolloutStatus) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = fmt.Sprintf("%s, step %d %s", st.Phase, st.CurrentStepIndex, st.CurrentStepState)
	p.progressing = p.progressing || st.Phase == rolloutsv1beta1.RolloutPhaseProgressing
	sub := st.CanaryStatus
	return p.progressing && st.Phase == rolloutsv1beta1.RolloutPhaseHealthy && sub != nil &&
		sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted && sub.FinalisingStep == ""
}

func (p *rolloutProgress) lastSeen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == "" {
		return "no change"
	}
	return p.last
}

// batchProgress marks each batch the BatchRelease reports done (by its
// 1-based number) and the BatchRelease Completed. A batch is done when the
// BatchRelease reports it Ready, or reports a later one: paced by its Rollout
// (pause 0), it starts the next batch without reporting the current Ready.
type batchProgress struct {
	last      int64
	ready     *marks
	completed *marks
}

func (b *batchProgress) observe(at time.Time, obj runtime.Object) {
	br, err := decode[rolloutsv1beta1.BatchRelease](obj)
	if err != nil {
		return
	}
	cs := br.Status.CanaryStatus
	done := int64(cs.CurrentBatch)
	if cs.CurrentBatchState == rolloutsv1beta1.ReadyBatchState {
		done++
	}
	for ; b.last < done; b.last++ {
		b.ready.add(b.last+1, at)
	}
	if br.Status.Phase == rolloutsv1beta1.RolloutPhaseCompleted {
		b.completed.add(1, at)
	}
}
