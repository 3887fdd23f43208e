package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	imagePullJobNamespace = "bench-imagepulljob"
	// imagePullJobNodes is the fleet of kwok nodes, each with a NodeImage and a simulated agent.
	imagePullJobNodes = 200
	// imagePullJobImage is what the jobs pull; no registry serves it, since no agent really pulls.
	imagePullJobImage = "registry.bench.test/bench/app"
	// simulatedPull is how long a simulated agent takes to pull; the real runtime's part of the scenario
	// measures what a 10 MiB image takes.
	simulatedPull = 500 * time.Millisecond
	// nodeImagesWait bounds the wait for the manager to create every node's NodeImage (30 s after the node
	// became Ready).
	nodeImagesWait = 3 * time.Minute
	// ImagePullJobGateFlag turns on the manager's ImagePullJob controller, off by default as upstream's.
	imagePullJobGateFlag = "--feature-gates=ImagePullJobGate=true"
)

var imagePullJobsResource = kruiseappsv1alpha1.GroupVersion.WithResource("imagepulljobs")

// imagePullJobSpec is one measured job.
type imagePullJobSpec struct {
	name, tag   string
	parallelism int
}

// imagePullJobRuns are the measured jobs, in order, each on a tag of its own: every node at once, then ten at
// a time (upstream's example), where each node finishing starts the next.
var imagePullJobRuns = []imagePullJobSpec{
	{name: "all-nodes", tag: "v1", parallelism: imagePullJobNodes},
	{name: "ten-at-a-time", tag: "v2", parallelism: 10},
}

// imagePullJobCounters tell where a job's writes and time went.
var imagePullJobCounters = []counterSpec{
	{"NodeImage writes that conflicted", "flotilla_imagepulljob_nodeimage_updates_total", map[string]string{"result": "conflict"}},
	writeConflicts,
	requestsRejected,
	{"ImagePullJob reconciles", reconcileTotal, map[string]string{"controller": "imagepulljob-controller"}},
	{"NodeImage reconciles", reconcileTotal, map[string]string{"controller": "nodeimage-controller"}},
}

// imagePullJob runs ImagePullJobs over 200 kwok nodes whose agents the harness plays, and, where this machine
// can run the cluster's real node, compares the agent's pull of a 10 MiB image with ctr's.
func imagePullJob() Scenario {
	return Scenario{
		Name: "imagepulljob",
		Description: fmt.Sprintf("an ImagePullJob over %d kwok nodes whose agents the harness simulates (each pull %v, their "+
			"status writes and events as the agent's, at most %d writes in flight), from its creation until its status shows it "+
			"completed, at parallelism %d and %d, with the manager's writes per node; before that, on the real node's containerd, "+
			"the agent's pull of a 10 MiB image from a registry on loopback against `ctr image pull` of it (%d each, alternating)",
			imagePullJobNodes, simulatedPull, simAgentWriters, imagePullJobRuns[0].parallelism, imagePullJobRuns[1].parallelism, pullRounds),
		Cluster: cluster.Options{ControllerManager: true, Nodes: imagePullJobNodes, RealNode: cluster.RealNodeSupport("") == nil},
		Timeout: 20 * time.Minute,
		Run:     runImagePullJobs,
	}
}

func runImagePullJobs(ctx context.Context, env *Env, res *Result) (err error) {
	res.Cluster.Objects = map[string]int{"imagepulljobs": len(imagePullJobRuns), "nodeimages": imagePullJobNodes}
	// The real runtime's pulls first, while nothing else runs but the idle cluster.
	if err := addPullComparison(ctx, env, res); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return fmt.Errorf("creating a dynamic client: %w", err)
	}
	if err := ensureNamespace(ctx, env.Kube, imagePullJobNamespace); err != nil {
		return err
	}
	if err := env.StartManager(ctx, imagePullJobGateFlag); err != nil {
		return err
	}
	agents, err := startSimAgents(ctx, dyn, env.Kube, simulatedPull)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, agents.stop()) }()
	waitCtx, cancel := context.WithTimeout(ctx, nodeImagesWait)
	defer cancel()
	if err := agents.awaitNodeImages(waitCtx, imagePullJobNodes, "type", "kwok"); err != nil {
		return err
	}
	runs := make([]ipjRun, 0, len(imagePullJobRuns))
	for _, spec := range imagePullJobRuns {
		run, err := runImagePullJob(ctx, env, dyn, agents, spec)
		if err != nil {
			return fmt.Errorf("ImagePullJob %s: %w", spec.name, err)
		}
		runs = append(runs, run)
	}
	if err := agents.err(); err != nil {
		env.Logf("the simulated agents retried after: %v", err)
	}
	res.Record(runs[0].Phase)
	for _, r := range runs {
		if err := checkImagePullJobRun(r); err != nil {
			return err
		}
		res.Add(imagePullJobMetrics(r)...)
	}
	return nil
}

// runImagePullJob times one job from its creation to its status showing it completed, and on until every
// NodeImage is free of its tag again; the agents' writes are counted apart from the manager's.
func runImagePullJob(ctx context.Context, env *Env, dyn dynamic.Interface, agents *simAgents, spec imagePullJobSpec) (ipjRun, error) {
	run := ipjRun{Name: spec.name, Parallelism: spec.parallelism, Nodes: imagePullJobNodes, Pull: simulatedPull}
	ctx, cancel := context.WithTimeout(ctx, clonesetRunTimeout)
	defer cancel()
	done := newMarks()
	f, err := followCreated(ctx, dyn, imagePullJobsResource, imagePullJobNamespace, spec.name, done, imagePullJobCompleted)
	if err != nil {
		return run, err
	}
	if err := sleep(ctx, watchConnect); err != nil {
		return run, errors.Join(err, f.stop())
	}
	agentsBefore := agents.writeCounts()
	env.Logf("ImagePullJob %s (parallelism %d): creating", spec.name, spec.parallelism)
	run.Phase, err = env.Measure(ctx, nil, func(ctx context.Context) error {
		return timeImagePullJob(ctx, env, dyn, agents, spec, done, &run)
	})
	run.AgentWrites = DiffRequests(agentsBefore, agents.writeCounts())
	if err = errors.Join(err, f.stop()); err != nil {
		return run, err
	}
	u, err := dyn.Resource(imagePullJobsResource).Namespace(imagePullJobNamespace).Get(ctx, spec.name, metav1.GetOptions{})
	if err != nil {
		return run, fmt.Errorf("reading the job: %w", err)
	}
	job, err := decode[kruiseappsv1alpha1.ImagePullJob](u)
	if err != nil {
		return run, err
	}
	run.Desired, run.Succeeded, run.Failed = job.Status.Desired, job.Status.Succeeded, job.Status.Failed
	env.Logf("ImagePullJob %s: completed after %v (succeeded %d of %d; all NodeImages tagged %v, all Succeeded %v), "+
		"tags taken back after %v; manager %d writes, agents %d", spec.name, run.Completed.Round(time.Millisecond), run.Succeeded,
		run.Desired, run.AllTagged.Round(time.Millisecond), run.AllSucceeded.Round(time.Millisecond), run.Released.Round(time.Millisecond),
		writes(run.Phase.Requests), writes(run.AgentWrites))
	return run, dyn.Resource(imagePullJobsResource).Namespace(imagePullJobNamespace).Delete(ctx, spec.name, metav1.DeleteOptions{})
}

// timeImagePullJob creates the job and waits for its completion, then for the last NodeImage free of its tag,
// reading the manager's counters at both ends.
func timeImagePullJob(ctx context.Context, env *Env, dyn dynamic.Interface, agents *simAgents, spec imagePullJobSpec,
	done *marks, run *ipjRun) error {
	before, err := env.ManagerSamples(ctx)
	if err != nil {
		return err
	}
	begin := time.Now()
	if err := createObject(ctx, dyn, imagePullJobsResource, benchImagePullJob(spec)); err != nil {
		return err
	}
	m, err := done.await(ctx, 1)
	if err != nil {
		return errors.Join(fmt.Errorf("waiting for the job's completion: %w", err), agents.err())
	}
	run.Completed = m.At.Sub(begin)
	idle, err := agents.awaitIdle(ctx, m.At)
	if err != nil {
		return err
	}
	run.Released = idle.Sub(begin)
	tagged, succeeded := agents.lastProgress()
	run.AllTagged, run.AllSucceeded = tagged.Sub(begin), succeeded.Sub(begin)
	after, err := env.ManagerSamples(ctx)
	if err != nil {
		return err
	}
	run.Counters = counterRises(imagePullJobCounters, before, after)
	return nil
}

// benchImagePullJob pulls the spec's tag on every kwok node (the real node, where there is one, is left out).
func benchImagePullJob(spec imagePullJobSpec) *kruiseappsv1alpha1.ImagePullJob {
	return &kruiseappsv1alpha1.ImagePullJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "ImagePullJob"},
		ObjectMeta: benchObjectMeta(imagePullJobNamespace, spec.name),
		Spec: kruiseappsv1alpha1.ImagePullJobSpec{
			Image: imagePullJobImage + ":" + spec.tag,
			ImagePullJobTemplate: kruiseappsv1alpha1.ImagePullJobTemplate{
				Selector: &kruiseappsv1alpha1.ImagePullJobNodeSelector{
					LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"type": "kwok"}}},
				Parallelism:      ptr.To(intstr.FromInt(spec.parallelism)),
				CompletionPolicy: kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Always},
			},
		},
	}
}

// imagePullJobCompleted: the job's status has its completionTime.
func imagePullJobCompleted(u *unstructured.Unstructured) bool {
	job, err := decode[kruiseappsv1alpha1.ImagePullJob](u)
	return err == nil && job.Status.CompletionTime != nil
}

// addPullComparison measures the agent's pulls against ctr's on the real node, or says why it cannot.
func addPullComparison(ctx context.Context, env *Env, res *Result) error {
	node := env.Cluster.RealNode()
	if node == nil {
		reason := cluster.RealNodeSupport("")
		if reason == nil {
			reason = errors.New("the cluster started without its real node")
		}
		env.Logf("skipping the real runtime's pulls: %v", reason)
		res.Add(pullSkipped(reason))
		return nil
	}
	times, err := measurePulls(ctx, env, node)
	if err != nil {
		return err
	}
	c, err := comparePulls(times)
	if err != nil {
		return err
	}
	if res.Latencies == nil {
		res.Latencies = map[string]Summary{}
	}
	res.Latencies["agent pull"], res.Latencies["ctr pull"] = c.Agent, c.Ctr
	res.Add(pullMetrics(c)...)
	return nil
}
