package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	broadcastJobNamespace = "bench-broadcastjob"
	// broadcastJobNodes is the fleet: one pod per node.
	broadcastJobNodes = 500
	// broadcastJobRatioTarget bounds the BroadcastJob's time over the native Job's.
	broadcastJobRatioTarget = 1.2
	kindBroadcastJob        = "BroadcastJob"
	kindJob                 = "Job"
)

// broadcastJobOrder runs the kinds as A B B A, each job deleted with its pods before the next: the cluster's
// drift falls on both alike, to first order.
var broadcastJobOrder = []string{kindJob, kindBroadcastJob, kindBroadcastJob, kindJob}

var (
	broadcastJobsResource = kruiseappsv1alpha1.GroupVersion.WithResource("broadcastjobs")
	jobsResource          = batchv1.SchemeGroupVersion.WithResource("jobs")
)

// broadcastJobCounters tell where the BroadcastJob runs' writes and time went.
var broadcastJobCounters = []counterSpec{
	writeConflicts,
	requestsRejected,
	{"BroadcastJob reconciles", reconcileTotal, map[string]string{"controller": "broadcastjob-controller"}},
}

// broadcastJob runs a BroadcastJob over 500 kwok nodes (parallelism 100%) until it is completed, against a
// native Job of 500 completions, 500 at once, in the same cluster.
func broadcastJob() Scenario {
	return Scenario{
		Name: "broadcastjob",
		Description: fmt.Sprintf("a BroadcastJob over %d nodes (parallelism 100%%) from its creation until its status shows it "+
			"completed, against an apps/v1 Job of %d completions and parallelism %d (runs %s); kwok ends each pod "+
			"Succeeded as soon as it runs", broadcastJobNodes, broadcastJobNodes, broadcastJobNodes, strings.Join(broadcastJobOrder, ", ")),
		Cluster: cluster.Options{ControllerManager: true, Scheduler: true, Nodes: broadcastJobNodes, PodsPerNode: 110, Args: nativeArgs()},
		Timeout: 20 * time.Minute,
		Run:     runBroadcastJobs,
	}
}

// broadcastJobRun is one job's run.
type broadcastJobRun struct {
	Kind     string
	Figures  runFigures
	Phase    Phase
	Counters []float64
}

func runBroadcastJobs(ctx context.Context, env *Env, res *Result) error {
	res.Cluster.Objects = map[string]int{"broadcastjobs": 2, "jobs": 2, "pods": len(broadcastJobOrder) * broadcastJobNodes}
	dyn, kcm, err := startCloneSetScenario(ctx, env, broadcastJobNamespace)
	if err != nil {
		return err
	}
	runs := make([]broadcastJobRun, 0, len(broadcastJobOrder))
	for i, kind := range broadcastJobOrder {
		run, err := runOneJob(ctx, env, dyn, kcm, fmt.Sprintf("%s-%d", strings.ToLower(kind), i+1), kind)
		if err != nil {
			return fmt.Errorf("run %d (%s): %w", i+1, kind, err)
		}
		runs = append(runs, run)
	}
	return addBroadcastJobMetrics(res, runs)
}

// runOneJob times one job from its creation to its completion, then deletes it with its pods.
func runOneJob(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc, name, kind string) (broadcastJobRun, error) {
	run := broadcastJobRun{Kind: kind}
	resource, obj := jobsResource, any(benchJob(name))
	if kind == kindBroadcastJob {
		resource, obj = broadcastJobsResource, benchBroadcastJob(name)
	}
	runCtx, cancel := context.WithTimeout(ctx, clonesetRunTimeout)
	defer cancel()
	env.Logf("%s %s: creating", kind, name)
	w, phase, err := timeWorkloadChange(runCtx, env, kcm, timedChange{
		namespace: broadcastJobNamespace, name: name, pods: newPodProgress(anyPod, podSucceeded),
		status:   func(ctx context.Context, m *marks) (*follower, error) { return followJob(ctx, dyn, resource, name, m) },
		settle:   watchConnect,
		counters: broadcastJobCounters,
		change: func(ctx context.Context) (int64, error) {
			return 1, createObject(ctx, dyn, resource, obj.(metav1.Object))
		},
	})
	if err != nil {
		return run, err
	}
	run.Phase, run.Counters = phase, w.Counters
	if run.Figures, err = analyseRun(w, broadcastJobNodes); err != nil {
		return run, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	logRun(env, kind+" "+name, run.Figures, phase, "created")
	return run, removeWorkload(ctx, env, broadcastJobNamespace, name, func(ctx context.Context) error {
		return dyn.Resource(resource).Namespace(broadcastJobNamespace).Delete(ctx, name,
			metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	})
}

func podSucceeded(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded }

// benchJob is a Job of the harness's pod: 500 completions, 500 at once.
func benchJob(name string) *batchv1.Job {
	labels := workloadLabels(broadcastJobNamespace, name)
	tmpl := benchPodTemplate(labels)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: broadcastJobNamespace, Labels: labels},
		Spec: batchv1.JobSpec{Completions: ptr.To[int32](broadcastJobNodes), Parallelism: ptr.To[int32](broadcastJobNodes),
			Template: tmpl},
	}
}

// benchBroadcastJob is a BroadcastJob of the harness's pod on every node, all at once.
func benchBroadcastJob(name string) *kruiseappsv1alpha1.BroadcastJob {
	labels := workloadLabels(broadcastJobNamespace, name)
	tmpl := benchPodTemplate(labels)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &kruiseappsv1alpha1.BroadcastJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "BroadcastJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: broadcastJobNamespace, Labels: labels},
		Spec:       kruiseappsv1alpha1.BroadcastJobSpec{Parallelism: ptr.To(intstr.FromString("100%")), Template: tmpl},
	}
}

// jobStatus is what both kinds report of their end.
type jobStatus struct {
	Status struct {
		Phase      string `json:"phase"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// jobDone: a BroadcastJob's phase completed, a Job's Complete condition True.
func jobDone(s *jobStatus) bool {
	if s.Status.Phase == string(kruiseappsv1alpha1.PhaseCompleted) {
		return true
	}
	for _, c := range s.Status.Conditions {
		if c.Type == string(batchv1.JobComplete) && c.Status == string(corev1.ConditionTrue) {
			return true
		}
	}
	return false
}

// followJob follows a job that does not exist yet, marking generation 1 when its status shows it done.
func followJob(ctx context.Context, dyn dynamic.Interface, resource schema.GroupVersionResource, name string, m *marks) (*follower, error) {
	return followCreated(ctx, dyn, resource, broadcastJobNamespace, name, m, func(u *unstructured.Unstructured) bool {
		s, err := decode[jobStatus](u)
		return err == nil && jobDone(s)
	})
}

// followCreated follows an object that does not exist yet, from a list's resourceVersion, marking 1 at each
// event that done says shows it done.
func followCreated(ctx context.Context, dyn dynamic.Interface, resource schema.GroupVersionResource, namespace, name string, m *marks,
	done func(*unstructured.Unstructured) bool) (*follower, error) {
	return followNamed(ctx, dyn, resource, namespace, name, func(at time.Time, obj runtime.Object) {
		if u, ok := obj.(*unstructured.Unstructured); ok && done(u) {
			m.add(1, at)
		}
	})
}

// addBroadcastJobMetrics adds the figures: the BroadcastJob's time to completed against the Job's,
// and the manager's writes per pod.
func addBroadcastJobMetrics(res *Result, runs []broadcastJobRun) error {
	byKind := map[string][]broadcastJobRun{}
	var order []string
	for _, r := range runs {
		byKind[r.Kind] = append(byKind[r.Kind], r)
		order = append(order, fmt.Sprintf("%s %s", r.Kind, FormatValue(UnitSeconds, r.Figures.Total.Seconds())))
	}
	b, j := byKind[kindBroadcastJob], byKind[kindJob]
	if len(b) == 0 || len(j) == 0 {
		return fmt.Errorf("%d BroadcastJob and %d Job runs: need both", len(b), len(j))
	}
	bf, jf := meanFigures(jobFigures(b)), meanFigures(jobFigures(j))
	phase := sumPhases(jobPhases(b))
	res.Record(phase)
	pods := len(b) * broadcastJobNodes
	res.Add(
		Metric{Name: fmt.Sprintf("BroadcastJob over %d nodes: created -> completed", broadcastJobNodes), Unit: UnitSeconds, Value: bf.Total.Seconds(),
			Note: "job created -> status phase completed (the Job: condition Complete); mean of each kind's runs: " + strings.Join(order, ", ")}.
			Compared("Job", jf.Total.Seconds()).WithRatioTarget(broadcastJobRatioTarget),
		Metric{Name: "all pods created", Unit: UnitSeconds, Value: bf.AllStarted.Seconds(), Note: "job created -> last pod's creation seen"}.
			Compared("Job", jf.AllStarted.Seconds()),
		Metric{Name: "all pods Succeeded", Unit: UnitSeconds, Value: bf.AllFinished.Seconds(), Note: "job created -> last pod seen Succeeded"}.
			Compared("Job", jf.AllFinished.Seconds()),
		Metric{Name: "status lag", Unit: UnitSeconds, Value: bf.StatusLag.Seconds(), Note: "last pod seen Succeeded -> the status showing the job done"}.
			Compared("Job", jf.StatusLag.Seconds()),
		Metric{Name: "manager writes per pod", Unit: UnitPerPod, Value: float64(writes(phase.Requests)) / float64(pods),
			Note: fmt.Sprintf("%d pods: %s", pods, perPodWrites(phase.Requests, pods))},
	)
	var counters []float64
	for _, r := range b {
		for i, v := range r.Counters {
			if i >= len(counters) {
				counters = append(counters, 0)
			}
			counters[i] += v
		}
	}
	res.Add(counterMetrics(broadcastJobCounters, counters, "", fmt.Sprintf("sum of the %d BroadcastJob runs", len(b)))...)
	return nil
}

func jobFigures(runs []broadcastJobRun) []runFigures {
	out := make([]runFigures, len(runs))
	for i, r := range runs {
		out[i] = r.Figures
	}
	return out
}

func jobPhases(runs []broadcastJobRun) []Phase {
	out := make([]Phase, len(runs))
	for i, r := range runs {
		out[i] = r.Phase
	}
	return out
}
