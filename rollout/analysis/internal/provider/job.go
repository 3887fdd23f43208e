package provider

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/plan"
)

// Labels and metadata of a metric's Jobs.
const (
	// RunUIDLabel holds the UID of the AnalysisRun that owns the Job.
	RunUIDLabel = "analysis.flotilla.dev/run-uid"
	// MetricLabel holds the name of the metric the Job measures.
	MetricLabel = "analysis.flotilla.dev/metric"
	// JobNameKey is the measurement metadata key naming its Job.
	JobNameKey = "job-name"
)

// Job measures by running a Job owned by the run, named after the run, the metric and the measurement's
// number, so that a measurement looked at again (or retried after a restart) finds its Job instead of
// starting another. The Job's Complete condition makes the measurement Successful, its Failed condition
// Failed; until then it is in flight. Finished Jobs stay, with their pods' logs, until the run is deleted.
type Job struct {
	// Client reads Jobs (from the manager's cache) and creates and deletes them.
	Client client.Client
}

// Measure creates the measurement's Job unless it exists, and reads its outcome.
func (j *Job) Measure(ctx context.Context, req Request) (plan.Observation, error) {
	name := JobName(req.Run.Name, req.Metric.Name, req.Index)
	meta := map[string]string{JobNameKey: name}
	job := &batchv1.Job{}
	err := j.Client.Get(ctx, client.ObjectKey{Namespace: req.Run.Namespace, Name: name}, job)
	if apierrors.IsNotFound(err) {
		err = j.create(ctx, req, name)
		return plan.Observation{Metadata: meta, Message: "Job " + name + " created"}, err
	}
	if err != nil {
		return plan.Observation{}, fmt.Errorf("reading Job %s: %w", name, err)
	}
	o := jobOutcome(job)
	o.Metadata = meta
	return o, nil
}

func (j *Job) create(ctx context.Context, req Request, name string) error {
	spec := req.Metric.Provider.Job
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: req.Run.Namespace, Name: name,
			Labels: maps.Clone(spec.Metadata.Labels), Annotations: maps.Clone(spec.Metadata.Annotations)},
		Spec: *spec.Spec.DeepCopy(),
	}
	if job.Labels == nil {
		job.Labels = map[string]string{}
	}
	job.Labels[RunUIDLabel] = string(req.Run.UID)
	job.Labels[MetricLabel] = req.Metric.Name
	if err := controllerutil.SetControllerReference(req.Run, job, j.Client.Scheme()); err != nil {
		return err
	}
	if err := j.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Job %s: %w", name, err)
	}
	return nil
}

// jobOutcome is a Job's verdict from its conditions.
func jobOutcome(job *batchv1.Job) plan.Observation {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return plan.Observation{Done: true, Phase: analysisv1alpha1.AnalysisPhaseSuccessful, Message: "Job " + job.Name + " completed"}
		case batchv1.JobFailed:
			return plan.Observation{Done: true, Phase: analysisv1alpha1.AnalysisPhaseFailed,
				Message: strings.TrimSuffix(fmt.Sprintf("Job %s failed: %s: %s", job.Name, c.Reason, c.Message), ": ")}
		}
	}
	return plan.Observation{Message: fmt.Sprintf("Job %s running: %d active, %d succeeded, %d failed pods", job.Name,
		job.Status.Active, job.Status.Succeeded, job.Status.Failed)}
}

// Terminate deletes the Job of a measurement in flight, with its pods.
func (j *Job) Terminate(ctx context.Context, req Request) error {
	name := req.InFlight[JobNameKey]
	if name == "" {
		return nil
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: req.Run.Namespace, Name: name}}
	err := j.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Job %s: %w", name, err)
	}
	return nil
}

// maxJobName is the longest Job name: its pods carry it in a label.
const maxJobName = 63

// JobName is the name of a measurement's Job: <run>-<metric>-<index>, shortened with a hash of the whole past
// 63 characters.
func JobName(run, metric string, index int32) string {
	name := fmt.Sprintf("%s-%s-%d", run, metric, index)
	if len(name) <= maxJobName {
		return name
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	suffix := fmt.Sprintf("-%08x", h.Sum32())
	return strings.TrimRight(name[:maxJobName-len(suffix)], "-.") + suffix
}
