package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// simAgentWriters bounds the simulated agents' API writes in flight at once, over every node: the harness
// plays 200 agents from one process on a small machine, and must not flood the API server more than 200
// agents, each writing its own node's status, would.
const simAgentWriters = 16

// simAgentRetry is how soon a node whose status write failed is looked at again.
const simAgentRetry = 100 * time.Millisecond

// Names the node agent's image puller (nodeagent/internal/imagepuller) writes under.
const (
	simAgentController = "imagepuller-nodeagent"
	simAgentEvent      = "PullImageSucceed"
)

var nodeImagesResource = kruiseappsv1alpha1.GroupVersion.WithResource("nodeimages")

// simAgents play the node agents of kwok nodes, where none runs: they watch every NodeImage and, for each tag
// version its spec asks, write what the agent's image puller writes: the status with the tag Pulling, and
// after a simulated pull of a fixed time an event PullImageSucceed on the NodeImage and the status with the
// tag Succeeded; a tag taken out of the spec leaves the status at the next write. Status writes are JSON merge
// patches of the status subresource, computed as the agent's client computes them; a node is handled by one
// worker at a time, as the agent runs one reconcile at once.
type simAgents struct {
	dyn  dynamic.Interface
	kube kubernetes.Interface
	pull time.Duration

	queue workqueue.TypedDelayingInterface[string]
	sem   chan struct{}
	f     *follower
	wg    sync.WaitGroup

	mu    sync.Mutex
	nodes map[string]*simNode
	// busy counts the nodes whose NodeImage spec or status names a tag; idleAt is when it last became 0.
	busy   int
	idleAt time.Time
	// changed is closed and replaced at every change of the nodes.
	changed chan struct{}
	writes  map[RequestKey]int64
	errs    []error
}

// simNode is one node's NodeImage as last seen, and its agent's pull tasks.
type simNode struct {
	ni    *kruiseappsv1alpha1.NodeImage
	gen   int64
	busy  bool
	tasks map[pullKey]simTask
	// tagged: the spec names a tag; succeeded: the status shows every tag of the spec Succeeded at its
	// version. Each At is the arrival of the last event that made it so.
	tagged, succeeded     bool
	taggedAt, succeededAt time.Time
}

// pullKey names a pull task: an image name (no tag) and a tag.
type pullKey struct{ Image, Tag string }

func (k pullKey) ref() string { return k.Image + ":" + k.Tag }

// simTask is a pull task of one tag version: Pulling from Start, Succeeded at Completion.
type simTask struct {
	Version           int64
	Phase             kruiseappsv1alpha1.ImagePullPhase
	Start, Completion time.Time
	ImageID           string
}

// startSimAgents lists the NodeImages and follows them from there, with simAgentWriters workers.
func startSimAgents(ctx context.Context, dyn dynamic.Interface, kube kubernetes.Interface, pull time.Duration) (*simAgents, error) {
	a := &simAgents{dyn: dyn, kube: kube, pull: pull, queue: workqueue.NewTypedDelayingQueue[string](),
		sem: make(chan struct{}, simAgentWriters), nodes: map[string]*simNode{}, changed: make(chan struct{}),
		writes: map[RequestKey]int64{}}
	list, err := dyn.Resource(nodeImagesResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing NodeImages: %w", err)
	}
	now := time.Now()
	for i := range list.Items {
		a.observe(now, &list.Items[i])
	}
	a.f, err = follow(ctx, list.GetResourceVersion(), func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return dyn.Resource(nodeImagesResource).Watch(ctx, opts)
	}, a.observe)
	if err != nil {
		return nil, err
	}
	for range simAgentWriters {
		a.wg.Add(1)
		go a.work(ctx)
	}
	return a, nil
}

// stop ends the watch and the workers.
func (a *simAgents) stop() error {
	err := a.f.stop()
	a.queue.ShutDown()
	a.wg.Wait()
	return err
}

// observe takes a NodeImage event: the latest copy, whether the node is busy, and a look by its agent when
// the spec changed (the agent's controller filters on the generation).
func (a *simAgents) observe(at time.Time, obj runtime.Object) {
	ni, err := decode[kruiseappsv1alpha1.NodeImage](obj)
	if err != nil {
		a.fail(err)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.nodes[ni.Name]
	if n == nil {
		n = &simNode{tasks: map[pullKey]simTask{}}
		a.nodes[ni.Name] = n
	} else if olderThan(ni.ResourceVersion, n.ni.ResourceVersion) {
		return // the agents' own write came back first
	}
	n.ni = ni
	a.setBusy(n, len(ni.Spec.Images) > 0 || len(ni.Status.ImageStatuses) > 0, at)
	if tagged := len(ni.Spec.Images) > 0; tagged != n.tagged {
		n.tagged = tagged
		if tagged {
			n.taggedAt = at
		}
	}
	if succeeded := allSucceeded(ni); succeeded != n.succeeded {
		n.succeeded = succeeded
		if succeeded {
			n.succeededAt = at
		}
	}
	if ni.Generation != n.gen {
		n.gen = ni.Generation
		a.queue.Add(ni.Name)
	}
	a.notify()
}

// olderThan compares resource versions, which the API server's etcd storage makes increasing integers.
func olderThan(rv, than string) bool {
	a, errA := strconv.ParseUint(rv, 10, 64)
	b, errB := strconv.ParseUint(than, 10, 64)
	return errA == nil && errB == nil && a < b
}

func (a *simAgents) setBusy(n *simNode, busy bool, at time.Time) {
	if busy == n.busy {
		return
	}
	n.busy = busy
	if busy {
		a.busy++
		return
	}
	if a.busy--; a.busy == 0 {
		a.idleAt = at
	}
}

// notify wakes the waiters; a.mu is held.
func (a *simAgents) notify() {
	close(a.changed)
	a.changed = make(chan struct{})
}

func (a *simAgents) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.errs) < 10 {
		a.errs = append(a.errs, err)
	}
}

// err is what went wrong so far, nil when nothing did.
func (a *simAgents) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return errors.Join(a.errs...)
}

// await waits until cond, called with a.mu held, holds.
func (a *simAgents) await(ctx context.Context, what string, cond func() bool) error {
	for {
		a.mu.Lock()
		ok, changed := cond(), a.changed
		a.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("waiting until %s: %w", what, ctx.Err()), a.err())
		case <-changed:
		}
	}
}

// awaitNodeImages waits for n NodeImages carrying the label selected.
func (a *simAgents) awaitNodeImages(ctx context.Context, n int, label, value string) error {
	return a.await(ctx, fmt.Sprintf("%d NodeImages have %s=%s", n, label, value), func() bool {
		count := 0
		for _, node := range a.nodes {
			if node.ni.Labels[label] == value {
				count++
			}
		}
		return count >= n
	})
}

// awaitIdle waits until no NodeImage names a tag, in spec or status, and returns the arrival of the event
// that made it so; a time before after does not count.
func (a *simAgents) awaitIdle(ctx context.Context, after time.Time) (time.Time, error) {
	var at time.Time
	err := a.await(ctx, "no NodeImage names a tag", func() bool {
		at = a.idleAt
		return a.busy == 0 && !at.Before(after)
	})
	return at, err
}

// lastProgress is when the last node became tagged and when the last became Succeeded, however they are now.
func (a *simAgents) lastProgress() (tagged, succeeded time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, n := range a.nodes {
		if n.taggedAt.After(tagged) {
			tagged = n.taggedAt
		}
		if n.succeededAt.After(succeeded) {
			succeeded = n.succeededAt
		}
	}
	return tagged, succeeded
}

// allSucceeded: the spec names tags and the status shows each Succeeded at the spec's version.
func allSucceeded(ni *kruiseappsv1alpha1.NodeImage) bool {
	if len(ni.Spec.Images) == 0 {
		return false
	}
	for image, img := range ni.Spec.Images {
		for _, tag := range img.Tags {
			if !slices.ContainsFunc(ni.Status.ImageStatuses[image].Tags, func(s kruiseappsv1alpha1.ImageTagStatus) bool {
				return s.Tag == tag.Tag && s.Version == tag.Version && s.Phase == kruiseappsv1alpha1.ImagePhaseSucceeded
			}) {
				return false
			}
		}
	}
	return true
}

// writeCounts is what the agents wrote so far, by verb and resource.
func (a *simAgents) writeCounts() map[RequestKey]float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[RequestKey]float64, len(a.writes))
	for k, v := range a.writes {
		out[k] = float64(v)
	}
	return out
}

func (a *simAgents) work(ctx context.Context) {
	defer a.wg.Done()
	for {
		name, shutdown := a.queue.Get()
		if shutdown {
			return
		}
		if err := a.reconcile(ctx, name); err != nil && ctx.Err() == nil {
			a.fail(err)
			a.queue.AddAfter(name, simAgentRetry)
		}
		a.queue.Done(name)
	}
}

// reconcile is the agent's reconcile of its NodeImage: a new tag version starts a pull, a tag gone from the
// spec is forgotten, and the status follows.
func (a *simAgents) reconcile(ctx context.Context, name string) error {
	a.mu.Lock()
	n := a.nodes[name]
	ni, now := n.ni, time.Now()
	n.tasks = a.plan(name, ni.Spec, n.tasks, now)
	status := agentStatus(ni.Spec, n.tasks, ni.Status, now)
	a.mu.Unlock()
	if equality.Semantic.DeepEqual(ni.Status, status) {
		return nil
	}
	next := ni.DeepCopy()
	next.Status = status
	patch, err := client.MergeFrom(ni).Data(next)
	if err != nil {
		return fmt.Errorf("status patch of NodeImage %s: %w", name, err)
	}
	u, err := a.write(ctx, RequestKey{Verb: "patch", Resource: "nodeimages/status"}, func(ctx context.Context) (runtime.Object, error) {
		return a.dyn.Resource(nodeImagesResource).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	})
	if err != nil {
		return fmt.Errorf("patching the status of NodeImage %s: %w", name, err)
	}
	written, err := decode[kruiseappsv1alpha1.NodeImage](u)
	if err != nil {
		return err
	}
	a.mu.Lock()
	if olderThan(n.ni.ResourceVersion, written.ResourceVersion) { // the watch has not shown it yet
		n.ni = written
	}
	a.mu.Unlock()
	return nil
}

// plan starts a task for each tag version of spec the agent has none for, and drops the tasks of tags spec
// no longer names; a.mu is held.
func (a *simAgents) plan(node string, spec kruiseappsv1alpha1.NodeImageSpec, tasks map[pullKey]simTask, now time.Time) map[pullKey]simTask {
	next := make(map[pullKey]simTask, len(tasks))
	for image, img := range spec.Images {
		for _, tag := range img.Tags {
			k := pullKey{Image: image, Tag: tag.Tag}
			t, ok := tasks[k]
			if !ok || t.Version != tag.Version {
				t = simTask{Version: tag.Version, Phase: kruiseappsv1alpha1.ImagePhasePulling, Start: now}
				version := tag.Version
				time.AfterFunc(a.pull, func() { a.pulled(node, k, version) })
			}
			next[k] = t
		}
	}
	return next
}

// pulled ends a simulated pull: the task succeeds, the event is recorded and the node looked at again.
func (a *simAgents) pulled(node string, k pullKey, version int64) {
	a.mu.Lock()
	n := a.nodes[node]
	t, ok := n.tasks[k]
	if !ok || t.Version != version || t.Phase != kruiseappsv1alpha1.ImagePhasePulling {
		a.mu.Unlock()
		return
	}
	t.Phase, t.Completion, t.ImageID = kruiseappsv1alpha1.ImagePhaseSucceeded, time.Now(), k.Image+"@sha256:"+simImageDigest
	n.tasks[k] = t
	regarding := corev1.ObjectReference{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "NodeImage", Name: node, UID: n.ni.UID}
	a.mu.Unlock()
	a.queue.Add(node)
	_, err := a.write(context.Background(), RequestKey{Verb: "create", Resource: "events"}, func(ctx context.Context) (runtime.Object, error) {
		return a.kube.EventsV1().Events(metav1.NamespaceDefault).Create(ctx, pullEvent(node, regarding, k, t), metav1.CreateOptions{})
	})
	if err != nil {
		a.fail(fmt.Errorf("recording the pull event of %s: %w", node, err))
	}
}

// simImageDigest is the simulated image's digest in the status's imageID.
const simImageDigest = "0000000000000000000000000000000000000000000000000000000000000001"

// pullEvent is the agent's PullImageSucceed event about a NodeImage, as its events.k8s.io recorder makes it.
func pullEvent(node string, regarding corev1.ObjectReference, k pullKey, t simTask) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", node, t.Completion.UnixNano()), Namespace: metav1.NamespaceDefault},
		EventTime:           metav1.NewMicroTime(t.Completion),
		ReportingController: simAgentController,
		ReportingInstance:   simAgentController + "-" + node,
		Action:              "Pull " + k.ref(),
		Reason:              simAgentEvent,
		Regarding:           regarding,
		Note:                fmt.Sprintf("Image %s, elapsed time %v", k.ref(), t.Completion.Sub(t.Start).Round(time.Millisecond)),
		Type:                corev1.EventTypeNormal,
	}
}

// write sends one API write, at most simAgentWriters at once, and counts it.
func (a *simAgents) write(ctx context.Context, key RequestKey, fn func(context.Context) (runtime.Object, error)) (runtime.Object, error) {
	a.sem <- struct{}{}
	defer func() { <-a.sem }()
	obj, err := fn(ctx)
	a.mu.Lock()
	a.writes[key]++
	a.mu.Unlock()
	return obj, err
}

// agentStatus is the NodeImage status the agent's image puller writes for tasks (its imagepuller.Status):
// upstream's counters, the tags of each image sorted, times to the second, and firstSyncStatus kept once set
// and set when every tag of the node first finished (all succeed here).
func agentStatus(spec kruiseappsv1alpha1.NodeImageSpec, tasks map[pullKey]simTask, prev kruiseappsv1alpha1.NodeImageStatus,
	now time.Time) kruiseappsv1alpha1.NodeImageStatus {
	out := kruiseappsv1alpha1.NodeImageStatus{FirstSyncStatus: prev.FirstSyncStatus, ImageStatuses: map[string]kruiseappsv1alpha1.ImageStatus{}}
	for _, image := range slices.Sorted(maps.Keys(spec.Images)) {
		img := spec.Images[image]
		out.Desired += int32(len(img.Tags))
		var tags []kruiseappsv1alpha1.ImageTagStatus
		for _, tag := range img.Tags {
			t, ok := tasks[pullKey{Image: image, Tag: tag.Tag}]
			if !ok {
				continue
			}
			tags = append(tags, tagStatusOf(tag.Tag, t))
			switch t.Phase {
			case kruiseappsv1alpha1.ImagePhaseSucceeded:
				out.Succeeded++
			case kruiseappsv1alpha1.ImagePhasePulling:
				out.Pulling++
			}
		}
		if len(tags) > 0 {
			slices.SortFunc(tags, func(a, b kruiseappsv1alpha1.ImageTagStatus) int { return cmp.Compare(a.Tag, b.Tag) })
			out.ImageStatuses[image] = kruiseappsv1alpha1.ImageStatus{Tags: tags}
		}
	}
	if len(out.ImageStatuses) == 0 {
		out.ImageStatuses = nil
	}
	if out.FirstSyncStatus == nil && out.Desired > 0 && out.Succeeded == out.Desired {
		out.FirstSyncStatus = &kruiseappsv1alpha1.SyncStatus{SyncAt: toSecond(now), Status: kruiseappsv1alpha1.SyncStatusSucceeded}
	}
	return out
}

func tagStatusOf(tag string, t simTask) kruiseappsv1alpha1.ImageTagStatus {
	s := kruiseappsv1alpha1.ImageTagStatus{Tag: tag, Phase: t.Phase, Version: t.Version, ImageID: t.ImageID}
	start := toSecond(t.Start)
	s.StartTime = &start
	if !t.Completion.IsZero() {
		s.Progress = 100
		done := toSecond(t.Completion)
		s.CompletionTime = &done
	}
	return s
}

// toSecond drops what the API does not store, so that a status read back equals the one written.
func toSecond(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second).UTC()) }
