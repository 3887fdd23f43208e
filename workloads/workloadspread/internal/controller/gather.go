package controller

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/workloadref"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/admission"
)

// target is what the controller reads of a WorkloadSpread's target workload.
type target struct {
	replicas int32
	owners   []types.UID
}

// gather reads the target's desired replicas and its pods (those it, or a Deployment's ReplicaSets,
// controls); found is false when the target does not exist.
func (r *Reconciler) gather(ctx context.Context, ws *kruiseappsv1alpha1.WorkloadSpread) ([]*corev1.Pod, int32, bool, error) {
	t, err := r.target(ctx, ws)
	if t == nil || err != nil {
		return nil, 0, false, err
	}
	var pods []*corev1.Pod
	for _, owner := range t.owners {
		owned, err := r.pods.Get(ctx, ws.Namespace, string(owner), nil)
		if err != nil {
			return nil, 0, false, err
		}
		pods = append(pods, owned...)
	}
	return pods, t.replicas, true, nil
}

func (r *Reconciler) target(ctx context.Context, ws *kruiseappsv1alpha1.WorkloadSpread) (*target, error) {
	ref := ws.Spec.TargetReference
	if ref == nil {
		return nil, nil
	}
	if gk, _ := admission.TargetKind(ref); gk == workloadref.JobKind {
		return r.job(ctx, ws.Namespace, ref.Name)
	}
	w, err := r.finder.Find(ctx, ws.Namespace, workloadref.Ref{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}, false)
	if w == nil || err != nil {
		return nil, err
	}
	return &target{replicas: w.Replicas, owners: w.Owners}, nil
}

// job reads a Job: its parallelism is its replicas, as upstream counts them.
func (r *Reconciler) job(ctx context.Context, ns, name string) (*target, error) {
	job := &batchv1.Job{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Job %s: %w", name, err)
	}
	return &target{replicas: ptr.Deref(job.Spec.Parallelism, 1), owners: []types.UID{job.UID}}, nil
}
